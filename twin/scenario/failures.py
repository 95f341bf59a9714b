"""``failures:``: component failures, restarts, repairs and how long the job simulation may run."""

from twin.scenario.fields import Flag, Strict, number

Rate = number(ge="0", le="1", why="failures per device-hour; the Llama 3 rates are about 1e-5")


class Failures(Strict):
    enabled: Flag = False
    profile: str = "llama3-h100"
    seed: number(integer=True, ge="0", le="18446744073709551615", why="a 64-bit seed") = 0
    samples: number(integer=True, ge="1", le="1000", why="each sample simulates the whole job once") = 1
    rate_scale: number(ge="0", le="100", why="100x the Llama 3 rates is a failure a minute on 16,384 GPUs") = 1.0
    custom_rates: dict[str, Rate] = {}     # component → failures per device-hour
    detection_time: number("time", gt="0 s", le="1 d", why="a hung collective is noticed within hours") = 600.0
    restart_time: number("time", gt="0 s", le="7 d", why="relaunch and communicator set-up") = 300.0
    repair_time: number("time", gt="0 s", le="365 d", why="mean time to repair a node") = 172800.0
    # The job simulation stops here and reports that the job did not finish.
    horizon: number("time", gt="1 h", le="36500 d", why="the longest wall time a job simulation covers") = 5 * 365 * 86400.0
