"""Transformer shapes: parameter counts and FLOPs.

Conventions (Narayanan et al. SC'21, eq. 3): a matrix multiply of (m×k)·(k×n)
costs 2·m·k·n FLOPs; the backward pass costs twice the forward; attention
scores are counted over the full s×s matrix (no causal halving), so a GPT
layer costs 24·b·s·h²·(1 + s/6h) forward. Model FLOPs (for MFU) exclude
recomputation; hardware FLOPs include it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from twin import catalog
from twin.options import Activation, Norm, Position


@dataclass(frozen=True)
class ModelSpec:
    """A transformer's shape. Its counts are worked out once per model (``cached_property``): a search
    asks them for every plan."""
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    activation: Activation
    norm: Norm
    tied_embeddings: bool
    experts: int = 1
    top_k: int = 1
    source: str = ""
    position: Position = "learned"  # how positions enter (rope rotates q and k in every layer)

    @cached_property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @cached_property
    def kv_dim(self) -> int:
        """Width of K (and of V): kv_heads · head_dim (GQA/MQA make it narrower than hidden)."""
        return self.kv_heads * self.head_dim

    @property
    def ffn_matrices(self) -> int:
        """Weight matrices in one FFN: 2 for GELU, 3 for SwiGLU (gate, up, down)."""
        return 3 if self.activation == "swiglu" else 2

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    # -- parameters ------------------------------------------------------------------
    @cached_property
    def attention_params_per_layer(self) -> int:
        """Q, K, V and output projections."""
        return self.hidden * (self.hidden + 2 * self.kv_dim) + self.hidden * self.hidden

    @cached_property
    def ffn_params_per_expert(self) -> int:
        return self.ffn_matrices * self.hidden * self.ffn_hidden

    @cached_property
    def norm_params_per_layer(self) -> int:
        """Two norms per layer; LayerNorm has a bias as well as a scale."""
        return 2 * self.hidden * (2 if self.norm == "layernorm" else 1)

    @cached_property
    def final_norm_params(self) -> int:
        """The norm after the last layer."""
        return self.hidden * (2 if self.norm == "layernorm" else 1)

    @cached_property
    def router_params_per_layer(self) -> int:
        return self.hidden * self.experts if self.is_moe else 0

    @cached_property
    def dense_params_per_layer(self) -> int:
        """Parameters of a layer outside its experts (replicated across expert-parallel ranks)."""
        return self.attention_params_per_layer + self.norm_params_per_layer + self.router_params_per_layer

    @cached_property
    def expert_params_per_layer(self) -> int:
        return self.experts * self.ffn_params_per_expert

    @cached_property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @cached_property
    def head_params(self) -> int:
        """LM head: none of its own when tied to the input embedding."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @cached_property
    def params(self) -> int:
        """Total parameters (all experts)."""
        per_layer = self.dense_params_per_layer + self.expert_params_per_layer
        return self.layers * per_layer + self.embedding_params + self.head_params + self.final_norm_params

    @cached_property
    def active_params(self) -> int:
        """Parameters touched per token (top_k experts)."""
        per_layer = self.dense_params_per_layer + self.top_k * self.ffn_params_per_expert
        return self.layers * per_layer + self.embedding_params + self.head_params + self.final_norm_params

    # -- FLOPs per token, forward --------------------------------------------------------
    def layer_linear_flops_per_token(self) -> float:
        """Forward matmul FLOPs of one layer's projections and (top_k) FFN per token."""
        return 2.0 * (self.attention_params_per_layer + self.top_k * self.ffn_params_per_expert
                      + self.router_params_per_layer)

    def layer_attention_flops_per_token(self, seq_len: int) -> float:
        """Forward FLOPs of Q·Kᵀ and softmax·V per token: 2 · 2 · s · h (full s×s matrix)."""
        return 4.0 * seq_len * self.hidden

    def head_flops_per_token(self) -> float:
        """Forward FLOPs of the LM head (logits)."""
        return 2.0 * self.hidden * self.vocab

    def forward_flops_per_token(self, seq_len: int) -> float:
        layer = self.layer_linear_flops_per_token() + self.layer_attention_flops_per_token(seq_len)
        return self.layers * layer + self.head_flops_per_token()

    def weight_gradient_flops_per_token(self) -> float:
        """Backward FLOPs of the weight gradients (dW = Xᵀ·dY): one forward of every matmul with weights,
        the layers' projections and the LM head. Frozen weights skip them."""
        return self.layers * self.layer_linear_flops_per_token() + self.head_flops_per_token()

    def model_flops_per_token(self, seq_len: int, frozen: bool = False) -> float:
        """Training FLOPs per token without recomputation: forward + backward (2× forward: gradients of
        the activations and of the weights); ``frozen`` weights take no weight gradients, so the
        backward computes only the activation gradients (and attention's, which has no weights)."""
        flops = 3.0 * self.forward_flops_per_token(seq_len)
        return flops - self.weight_gradient_flops_per_token() if frozen else flops

    def hardware_flops_per_token(self, seq_len: int, recompute: str, frozen: bool = False) -> float:
        """Training FLOPs per token including recomputation.

        full: every layer's forward runs twice (Narayanan eq. 3: 96·B·s·l·h²·(1 + s/6h + V/16lh));
        selective: only the attention core (Q·Kᵀ, softmax, ·V) is recomputed (Korthikanti et al. 2022).
        """
        extra = 0.0
        if recompute == "full":
            extra = self.layers * (self.layer_linear_flops_per_token() + self.layer_attention_flops_per_token(seq_len))
        elif recompute == "selective":
            extra = self.layers * self.layer_attention_flops_per_token(seq_len)
        return self.model_flops_per_token(seq_len, frozen) + extra


def model_spec(name: str, field: str = "training.model") -> ModelSpec:
    """A catalog model by name (an unknown name is a ScenarioError naming ``field``)."""
    row = catalog.entry("models", name, field)
    fields = {k: v for k, v in row.items() if k != "source"}
    return ModelSpec(name=name, source=row.get("source", ""), **fields)
