"""``serving:``: a model served by replicas on whole GPUs or MIG instances, the engine, the load, the SLO.

Used instead of ``training:`` (docs/scenario.md, "serving"). Rules that tie these
keys to the hardware (FP8 on the GPU, the MIG profile of the GPU, tensor ranks
that divide the heads) are checked where the hardware is known, by the serving
layer, with the same one-line messages.
"""

from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, field_validator, model_validator

from twin.options import BatchScheduler, Distribution, KVPrecision, Offload, PrefillWithDecode, ServingPrecision
from twin.scenario.fields import Flag, Strict, name_text, number
from twin.scenario.training import Degree, ModelChoice

# Limits (docs/scenario.md, "Limits").
Tokens = number("count", ge="1", le="16M", why="2^24 tokens, above the longest context a published model serves (10M)")
# A million requests a second, above any published deployment (``twin capacity --rate`` takes the same bound).
MAX_RATE_PER_S = 1_000_000.0
Rate = number("rate", gt="0/s", le=f"{MAX_RATE_PER_S:.0f}/s", why="a million requests a second, above any published deployment")
Latency = number("time", gt="0 s", le="1 h", why="a target beyond an hour is no latency target")
MaxBatch = number(integer=True, ge="1", le="65536", why="2^16 sequences in flight")
TokensInFlight = number(integer=True, ge="1", le="1048576", why="2^20 tokens in one iteration")
BlockTokens = number(integer=True, ge="1", le="4096", why="tokens per paged-KV block; engines use 16 to 128")
SchedulerSteps = number(integer=True, ge="1", le="64", why="decode iterations one scheduling pass runs")
MemoryFraction = number(gt="0", le="1", why="a share of the memory left after weights and reserve")
Sigma = number(gt="0", le="4", why="standard deviation of the log; 4 spans eight decades")
Requests = number(integer=True, ge="1", le="100000",
                  why="10x the 10,000 requests that reach a steady state; the engine's work grows with them")
PrefixTokens = number(integer=True, ge="0", le="16777216", why="at most the prompt")
Seed = number(integer=True, ge="0", le="4294967295", why="a 32-bit seed")
Replicas = number(integer=True, ge="1", le="1048576", why="2^20 replicas")
Nodes = number(integer=True, ge="1", le="32768", why="as cluster.nodes")
AlternativeName = name_text(80)


def _mig_profile(value: Any) -> Any:
    """An empty profile would silently mean whole GPUs: refused."""
    if isinstance(value, str) and not value.strip():
        raise ValueError("an empty profile is not allowed: write a MIG profile of the node's GPU (e.g. 1g.10gb), "
                         "or leave mig out for whole GPUs")
    return value


MigProfile = Annotated[str, BeforeValidator(_mig_profile)]
# Alternatives a serving scenario compares at most (each one runs the whole load again).
MAX_ALTERNATIVES = 8


class Parallelism(Strict):
    """GPUs of one replica: tensor ranks × pipeline stages."""
    tensor: Degree = 1
    pipeline: Degree = 1


class Engine(Strict):
    """The serving engine: a catalog profile (engines.yaml) and the settings that override it.

    Keys left out take the profile's value (the defaults below are only what an unset key is
    shown as); ``serving.engine: vllm-0.6`` is short for ``{profile: vllm-0.6}``."""
    profile: str = "tensorrt-llm-0.13"
    max_batch: MaxBatch = 256
    max_tokens_in_flight: Union[Literal["auto"], TokensInFlight] = "auto"
    chunked_prefill: Flag = True
    prefix_cache: Flag = False
    scheduler: BatchScheduler = "no_evict"
    offload: Offload = "none"
    block_tokens: BlockTokens = 64
    kv_memory_fraction: MemoryFraction = 0.9
    scheduler_steps: SchedulerSteps = 1
    prefill_with_decode: PrefillWithDecode = "always"


class Lengths(Strict):
    """Token counts of requests: a distribution with its mean, clipped to [1, max]."""
    mean: Tokens
    distribution: Distribution = "fixed"
    max: Tokens | None = None              # default: the mean for fixed, 8 × the mean otherwise
    sigma: Sigma = 1.0

    @model_validator(mode="after")
    def _max_holds_the_mean(self) -> "Lengths":
        if self.max is not None and self.max < self.mean:
            raise ValueError(f"max {self.max:g} is below mean {self.mean:g}: requests are clipped to max, so the mean "
                             "could not be reached")
        if "sigma" in self.model_fields_set and self.distribution != "lognormal":
            raise ValueError(f"sigma shapes a lognormal distribution; distribution is {self.distribution}")
        return self


class Load(Strict):
    rate: Union[Literal["offline"], Rate]  # Poisson arrivals over the whole deployment, or all at t = 0
    requests: Requests = 1000
    input_tokens: Lengths
    output_tokens: Lengths
    prefix_tokens: PrefixTokens = 0
    seed: Seed = 0

    @model_validator(mode="after")
    def _prefix_inside_the_prompt(self) -> "Load":
        if self.prefix_tokens and self.prefix_tokens >= self.input_tokens.mean:
            raise ValueError(f"prefix_tokens {self.prefix_tokens} is not below input_tokens.mean "
                             f"{self.input_tokens.mean:g}: the shared prefix is part of the prompt")
        return self


class SLO(Strict):
    ttft_p99: Latency | None = None        # time to first token, 99th percentile
    tpot_p99: Latency | None = None        # time per output token after the first, 99th percentile


KVChoice = Literal["auto", KVPrecision]      # auto: the weights' precision (bf16 under int4)


class Alternative(Strict):
    """Another deployment of the same model and load, answered beside the first.

    Every key left out keeps the first deployment's value (``mig: null`` removes MIG).
    """
    name: AlternativeName | None = None
    node: str | None = None
    nodes: Nodes | None = None
    mig: MigProfile | None = None
    precision: ServingPrecision | None = None
    kv_cache: KVChoice | None = None
    parallelism: Parallelism | None = None
    replicas: Union[Literal["auto"], Replicas] | None = None
    offload: Offload | None = None     # engine.offload of this deployment


class Serving(Strict):
    model: ModelChoice
    precision: ServingPrecision = "bf16"   # weights and GEMMs; int4 is weight-only
    kv_cache: KVChoice = "auto"         # auto: the weights' precision (bf16 under int4)
    parallelism: Parallelism = Parallelism()
    replicas: Union[Literal["auto"], Replicas] = "auto"
    mig: MigProfile | None = None          # a MIG profile of the node's GPU (1g.10gb): each replica on one instance
    engine: Engine = Engine()              # a profile's name, or the profile and its overrides
    load: Load
    slo: SLO = SLO()
    compare: list[Alternative] = []

    @field_validator("engine", mode="before")
    @classmethod
    def _profile_by_name(cls, value):
        """``engine: vllm-0.6`` is ``engine: {profile: vllm-0.6}``."""
        return {"profile": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _bounded_comparison(self) -> "Serving":
        if len(self.compare) > MAX_ALTERNATIVES:
            raise ValueError(f"{len(self.compare)} alternatives is too many: at most {MAX_ALTERNATIVES} "
                             "(each is a simulation of its own)")
        return self
