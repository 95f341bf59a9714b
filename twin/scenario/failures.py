"""``failures:``: component failures, restarts, repairs and how long the job simulation may run."""

from twin.scenario.fields import Flag, Strict, number
from twin.units import SECONDS_PER_YEAR

Rate = number(ge="0", le="1", why="failures per device-hour; the Llama 3 rates are about 1e-5")
Seed = number(integer=True, ge="0", le="18446744073709551615", why="a 64-bit seed")
Samples = number(integer=True, ge="1", le="1000", why="each sample simulates the whole job once")
RateScale = number(ge="0", le="100", why="100x the Llama 3 rates is a failure a minute on 16,384 GPUs")
DetectionTime = number("time", gt="0 s", le="1 d", why="a hung collective is noticed within hours")
RestartTime = number("time", gt="0 s", le="7 d", why="relaunch and communicator set-up")
RepairTime = number("time", gt="0 s", le="365 d", why="mean time to repair a node")
Horizon = number("time", gt="1 h", le="36500 d", why="the longest wall time a job simulation covers")


class Failures(Strict):
    enabled: Flag = False
    profile: str = "llama3-h100"
    seed: Seed = 0
    samples: Samples = 1
    rate_scale: RateScale = 1.0
    custom_rates: dict[str, Rate] = {}     # component → failures per device-hour
    detection_time: DetectionTime = 600.0  # PyTorch's default NCCL collective timeout, 10 min
    restart_time: RestartTime = 300.0      # relaunch and communicator set-up (assumption, docs/engine.md)
    repair_time: RepairTime = 172800.0     # mean time to repair a node, 48 h (assumption, docs/engine.md)
    # The job simulation stops here and reports that the job did not finish.
    horizon: Horizon = 5 * SECONDS_PER_YEAR
