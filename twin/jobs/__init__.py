"""The job model shared by the training job engine (level 3) and the cluster (level 4).

- ``failures.py``: failure profiles (rates by component) and the failure policy;
- ``checkpoint.py``: a checkpoint's size and the time to write and read it, and the checkpoint policy;
- ``model.py``: what a job is: its kinds, its phases, the segments and events of its timeline;
- ``rules.py``: the level-3 rules as pure functions: Young/Daly's interval, the checkpoint cycle,
  the progress a failure keeps, the cost of a restart.

Both ``twin.engine.job`` and ``twin.operations`` use these; neither re-implements them.
"""
