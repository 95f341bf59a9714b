"""``training:``: the model, the data, the batch, the precision and the parallel plan."""

from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Discriminator, Tag, model_validator

from twin.options import (LORA_TARGETS, Activation, AttentionKernel, BackwardPrefetch, CrossEntropy, Fp8Recipe,
                          GradReduce, KernelStyle, Method, Norm, PipelineSends, Position, Precision, RankOrder,
                          Recompute, Schedule, ShardedGather, WeightStorage, Zero1Reduce)
from twin.scenario.data import Data
from twin.scenario.fields import Flag, Strict, name_text, number, shown

Layers = number(integer=True, ge="1", le="10000", why="100x the deepest published LLM")
Width = number(integer=True, ge="1", le="1048576", why="2^20, 20x the widest published model")
Heads = number(integer=True, ge="1", le="65536", why="2^16")
FfnWidth = number(integer=True, ge="1", le="4194304", why="2^22")
Vocab = number(integer=True, ge="1", le="16777216", why="2^24, 64x the largest published vocabulary")
Experts = number(integer=True, ge="1", le="4096", why="4x the most experts published")
ModelName = name_text(80)


class InlineModel(Strict):
    layers: Layers
    hidden: Width
    heads: Heads
    kv_heads: Heads | None = None
    ffn_hidden: FfnWidth | None = None
    vocab: Vocab
    activation: Activation = "swiglu"
    norm: Norm = "rmsnorm"
    tied_embeddings: Flag = False
    position: Position = "rope"
    experts: Experts = 1
    top_k: Experts = 1                     # at most experts
    name: ModelName = "custom"


def _model_kind(value: Any) -> str:
    return "inline-model" if isinstance(value, dict) else "catalog-model"


# A catalog name, or a mapping describing the model inline.
ModelChoice = Annotated[Union[Annotated[str, Tag("catalog-model")], Annotated[InlineModel, Tag("inline-model")]],
                        Discriminator(_model_kind)]

Degree = number(integer=True, ge="1", le="65536", why="2^16 ranks")
Replicas = number(integer=True, ge="1", le="1048576", why="2^20 replicas")
Microbatch = number(integer=True, ge="1", le="65536", why="2^16 sequences")
VirtualStages = number(integer=True, ge="1", le="1024", why="model chunks per pipeline stage")
ZeroStage = number(integer=True, ge="0", le="3", why="ZeRO stages 0 to 3")
Interval = number("time", gt="0 s", le="365 d", why="at least one checkpoint a year")
Tokens = number("count", gt="0", le="1000T", why="about 70x the 15T tokens of Llama 3")
SeqLen = number(integer=True, ge="1", le="16777216",
                why="2^24, above the longest context a published model trains on (10M)")
GlobalBatch = number(integer=True, ge="1", le="16777216", why="2^24 sequences")


class Parallelism(Strict):
    tensor: Degree = 1
    pipeline: Degree = 1
    data: Union[Literal["auto"], Replicas] = "auto"
    expert: Degree = 1
    microbatch: Microbatch = 1
    virtual_stages: VirtualStages = 1
    schedule: Schedule = "1f1b"
    sequence_parallel: Flag = True
    recompute: Recompute = "selective"
    zero: ZeroStage = 1
    overlap_grad_reduce: Flag | None = None          # unwritten: the stack's
    # Rank order, fastest-varying first: Megatron-LM's default keeps a tensor group inside a node.
    order: RankOrder = "tp-dp-pp"

    @model_validator(mode="after")
    def _schedule_follows_virtual_stages(self) -> "Parallelism":
        """Unwritten, the schedule is 1f1b, or interleaved when there are virtual stages to interleave."""
        if self.virtual_stages > 1 and "schedule" not in self.model_fields_set:
            return self.model_copy(update={"schedule": "interleaved"})
        return self


def _targets(value: Any) -> str | tuple[str, ...]:
    """``all-linear``, or a list of projections drawn from q k v o gate up down."""
    allowed = f"allowed: all-linear, or a list drawn from {' '.join(LORA_TARGETS)}"
    if value == "all-linear":
        return value
    if not isinstance(value, list) or not value:
        raise ValueError(f"{shown(value)} is not allowed; {allowed}")
    for name in value:
        if name not in LORA_TARGETS:
            raise ValueError(f"{shown(name)} is not a projection; {allowed}")
    return tuple(dict.fromkeys(value))


LoraRank = number(integer=True, ge="1", le="65536", why="2^16, wider than any projection is deep")
LoraAlpha = number(gt="0", le="1000000", why="a scale of the update")
LoraTargets = Annotated[Union[str, tuple[str, ...]], BeforeValidator(_targets)]


class Lora(Strict):
    """LoRA adapters; unwritten keys take the method's recipe (docs/scenario.md)."""
    rank: LoraRank | None = None
    alpha: LoraAlpha | None = None
    targets: LoraTargets | None = None


Params = number("count", ge="0", le="1000T", why="parameters, 1000x the largest published model")
StackName = name_text(80)


class StackOptions(Strict):
    """A catalog stack with some of its behaviours set here; unwritten ones are the profile's."""
    name: StackName
    grad_reduce: GradReduce | None = None
    zero1_reduce: Zero1Reduce | None = None
    overlap_param_gather: Flag | None = None
    tp_comm_overlap: Flag | None = None
    cross_entropy: CrossEntropy | None = None
    recompute_fused_attention: Flag | None = None
    pipeline_sends: PipelineSends | None = None
    zero_grad_buffer: Flag | None = None
    sharded_gather: ShardedGather | None = None
    backward_prefetch: BackwardPrefetch | None = None
    prefetch_bucket_params: Params | None = None
    max_live_params: Params | None = None
    reduce_bucket_params: Params | None = None
    persistence_threshold_params: Params | None = None
    regather_under_recompute: Flag | None = None
    quantised_inputs_kept: Flag | None = None


def _stack_kind(value: Any) -> str:
    return "stack-options" if isinstance(value, dict) else "catalog-stack"


# A catalog stack by name, or a mapping with its name and the behaviours set here.
StackChoice = Annotated[Union[Annotated[str, Tag("catalog-stack")], Annotated[StackOptions, Tag("stack-options")]],
                        Discriminator(_stack_kind)]
# The stack a scenario runs unless it names one (catalog stacks.yaml): Megatron-Core at its defaults.
DEFAULT_STACK = "megatron-core-2024"


class Checkpoint(Strict):
    interval: Union[Literal["auto"], Interval] = "auto"
    asynchronous: Flag = False


class Training(Strict):
    model: ModelChoice
    tokens: Tokens
    seq_len: SeqLen
    global_batch: GlobalBatch
    precision: Precision = "bf16"
    stack: StackChoice = DEFAULT_STACK
    # Unwritten (None): the stack's.
    attention: AttentionKernel | None = None
    kernels: KernelStyle | None = None
    autocast: Flag | None = None
    method: Method = "full"
    lora: Lora | None = None
    weights: WeightStorage | None = None
    fp8_recipe: Fp8Recipe | None = None
    parallelism: Parallelism = Parallelism()
    checkpoint: Checkpoint = Checkpoint()
    data: Data | None = None               # the dataset and its storage (docs/storage.md)
    stragglers: Flag = True                # the step waits for the slowest GPU (twin/engine/stragglers.py)

    @property
    def stack_name(self) -> str:
        """The catalog stack the section names, written by name or as a mapping with its overrides."""
        return self.stack if isinstance(self.stack, str) else self.stack.name

    @model_validator(mode="after")
    def _qlora_checkpoints_every_layer(self) -> "Training":
        """Unwritten, QLoRA recomputes every layer's activations (gradient checkpointing, as its recipe)."""
        if self.method == "qlora" and "recompute" not in self.parallelism.model_fields_set:
            return self.model_copy(update={"parallelism": self.parallelism.model_copy(update={"recompute": "full"})})
        return self
