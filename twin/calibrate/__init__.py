"""``twin calibrate`` and ``twin compare``: a site's own measurements in, a site profile and a drift report out.

One module per log format reads it exactly as its tool writes it (``nccl``, ``operator_rates``,
``vllm``, ``trtllm``, ``nvidia_smi``, ``dcgm``, ``sacct``, ``megatron``, ``torchtitan``);
``detect`` says which reader a file needs; ``fit`` turns the readings into a ``twin.profile.SiteProfile``;
``compare`` sets a run's measurements against the twin's prediction; ``command`` holds the CLI bodies.
A file no reader understands is refused in one line naming the file and line (docs/calibrate.md).
"""
