"""The ``flex`` backend: disentangled attention inside one FlexAttention kernel.

The two position terms are added to each score inside the kernel by a
``score_mod`` that reads two small tables at the pair's row ``delta(i, j)``:

    c2p_table[b, h, i, r] = Q_i . Pk[r] / sqrt(d * s)        (b, h, n, 2 * span)
    p2c_table[b, h, j, r] = K_j . Pq[r] / sqrt(d * s)        (b, h, n, 2 * span)

and the row of a pair is read from a 1-D lookup of length ``2n - 1`` indexed by
``i - j`` (``relpos.distance_lookup``). Nothing of size ``n x n`` is stored, not
even the index.

Where torch's kernel cannot run, this module says so:
- On the CPU, torch compiles flex only for float32/float16/bfloat16; float64 runs
  torch's uncompiled reference (exact, but it does store ``n x n`` scores).
- On the CPU, torch's flex kernel has no backward. When a gradient is needed
  there, the backward pass recomputes the attention with the gather formulation
  (``O(n^2)`` memory in the backward only). That recomputation calls
  ``torch.autograd.grad``, which ``torch.compile`` does not trace: on the CPU a
  compiled model uses flex for inference only.
- On the CPU, torch 2.13's compiled kernel is wrong when ``n`` is 8 more than a
  multiple of 16; the sequence is padded to a multiple of 16, its extra keys
  masked out (``_pad_for_cpu_kernel``).

Speed on the CPU: the kernel and the table products read the queries, keys and
values head by head, so they are laid out ``(b, h, n, d)`` in memory first
(:func:`heads_contiguous`); the module's split into heads is a strided view
whose rows lie ``hidden`` apart. At deberta-v3-base shapes and n = 2048 the
kernel alone took 12% (one thread) to 27% (two threads) less time on the
copies, the whole forward about 8% less (one thread, median of five), for three
more ``(b, n, hidden)`` tensors. The output is bitwise the same.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

import torch

from .gather import project
from .registry import PositionTerms
from ..positions import index_from_lookup
from ..scores import _gather_scores

_COMPILED_CPU_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_RECOMPILE_LIMIT = 64
# torch 2.13's compiled CPU kernel returns wrong numbers (sometimes NaN) when the
# sequence length is 8 more than a multiple of 16 (n = 8, 24, 40, 56, 120, 136
# were seen), even with no score_mod; at multiples of 16 it is right. On the CPU
# the sequence is padded to a multiple of this with keys that are masked out.
_CPU_LENGTH_MULTIPLE = 16


def _pad_for_cpu_kernel(query, key, value, c2p_table, p2c_table, key_mask):
    """Pad the sequence to a multiple of 16; padded keys masked, padded queries unread.

    The score_mod clamps positions into the original tables, so every real pair
    reads what it read before and a padded key gets the dtype's minimum.

    Shapes:
        query, key, value: ``(b, h, n, d)``; c2p_table, p2c_table: ``(b, h, n, r)``
        key_mask: ``(b, n)`` bool or None
        output: the same tensors with ``n`` rounded up to a multiple of 16, and
        the key mask ``(b, m)``
    """
    b, _, n, _ = query.shape
    m = -(-n // _CPU_LENGTH_MULTIPLE) * _CPU_LENGTH_MULTIPLE
    if m == n:
        return query, key, value, c2p_table, p2c_table, key_mask

    def pad(t):
        return None if t is None else torch.nn.functional.pad(t, (0, 0, 0, m - n))

    padded_mask = torch.zeros(b, m, dtype=torch.bool, device=query.device)
    padded_mask[:, :n] = True if key_mask is None else key_mask  # (b, m)
    return (*(pad(t) for t in (query, key, value, c2p_table, p2c_table)), padded_mask)


class FlexUnavailableError(RuntimeError):
    """FlexAttention cannot run here; ``backend="gather"`` computes the same result."""


def _unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means "flex cannot run here" rather than a bug.

    torch says so with: an ``ImportError`` (no flex in this torch), a
    ``NotImplementedError`` (an unsupported device, dtype or layout), its
    device check's ``ValueError`` ("FlexAttention is only supported on ..."),
    "requires dynamo support", and a failure of the compiler backend (inductor
    missing or unable to build a kernel: ``BackendCompilerFailed``,
    ``InductorError``). Everything else is re-raised unchanged.
    """
    if isinstance(exc, (ImportError, NotImplementedError)):
        return True
    if isinstance(exc, ValueError):
        return str(exc).startswith("FlexAttention is only supported on")
    if isinstance(exc, RuntimeError) and "requires dynamo support" in str(exc):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"BackendCompilerFailed", "InductorError", "CppCompileError"})


@functools.cache
def _flex_attention(compiled: bool) -> Callable:
    try:
        from torch.nn.attention.flex_attention import flex_attention
    except ImportError as exc:  # pragma: no cover - torch < 2.5
        raise FlexUnavailableError(
            f"backend='flex' needs torch.nn.attention.flex_attention (torch >= 2.5), "
            f"this is torch {torch.__version__}; use backend='gather' instead"
        ) from exc
    return torch.compile(flex_attention, dynamic=False) if compiled else flex_attention


@functools.lru_cache(maxsize=8)
def full_block_mask(seq_len: int, device: str, block_size: int = 128):
    """A BlockMask that marks every (query block, key block) tile as full (cached).

    See ``_full_block_mask``.

    Shapes:
        output: a BlockMask of ``nb = ceil(n / block_size)`` blocks per side, one
        tile index per (query block, key block): ``(1, 1, nb, nb)``
    """
    return _full_block_mask(seq_len, device, block_size)


def _full_block_mask(seq_len: int, device: str, block_size: int):
    """A BlockMask that marks every (query block, key block) tile as full.

    Full tiles tell the kernel that no mask applies inside them. Without a block
    mask, flex uses one whose tiles are partial and evaluates a no-op mask per
    score, which costs about a third of the kernel's time on the CPU. Built from
    the block indices directly: ``O((n / block_size)^2)`` integers, not ``n^2``.

    Shapes:
        output: a BlockMask of ``nb = ceil(n / block_size)`` blocks per side, one
        tile index per (query block, key block): ``(1, 1, nb, nb)``
    """
    from torch.nn.attention.flex_attention import BlockMask, noop_mask

    blocks = -(-seq_len // block_size)  # ceil
    partial_count = torch.zeros(1, 1, blocks, dtype=torch.int32, device=device)
    partial_index = torch.zeros(1, 1, blocks, blocks, dtype=torch.int32, device=device)
    full_count = torch.full((1, 1, blocks), blocks, dtype=torch.int32, device=device)
    full_index = torch.arange(blocks, dtype=torch.int32, device=device)
    full_index = full_index.expand(1, 1, blocks, blocks).contiguous()
    return BlockMask.from_kv_blocks(
        partial_count,
        partial_index,
        full_count,
        full_index,
        BLOCK_SIZE=block_size,
        mask_mod=noop_mask,
        seq_lengths=(seq_len, seq_len),
    )


def make_score_mod(
    c2p_table: torch.Tensor | None,
    p2c_table: torch.Tensor | None,
    lookup: torch.Tensor,
    key_mask: torch.Tensor | None,
    *,
    causal: bool = False,
) -> Callable:
    """The ``score_mod``: adds c2p and p2c at row ``lookup[i - j + n - 1]``, masks keys.

    Padded keys get the dtype's minimum; with ``causal=True`` the keys after the
    query (``j > i``) get ``-inf`` after that, as in ``relpos.scores``.

    Shapes:
        c2p_table: ``(b, h, i, r)``; p2c_table: ``(b, h, j, r)``
        lookup: ``(2n - 1,)``; key_mask: ``(b, j)`` bool
    """
    offset = (lookup.shape[0] - 1) // 2  # n - 1
    last_key = None if key_mask is None else key_mask.shape[-1] - 1
    # Keys added by the CPU padding (past the tables) get -inf, below a padded
    # real key's dtype minimum: a query whose real keys are all padding still
    # spreads its weight over its n keys alone, as the other backends do.
    added_keys = last_key is not None and last_key > offset

    def score_mod(score, b, h, i, j):
        # The kernel works in tiles of 128 and may evaluate this at i, j >= n (the
        # tile's padding, masked afterwards): clamp every index into its tensor, or
        # those evaluations read memory past the tables (garbage, NaN). The key
        # mask may be longer than the tables (keys padded on the CPU): it is read
        # at the key's own position.
        ii = torch.clamp(i, 0, offset)
        jj = torch.clamp(j, 0, offset)
        row = lookup[ii - jj + offset]
        if c2p_table is not None:
            score = score + c2p_table[b, h, ii, row]
        if p2c_table is not None:
            score = score + p2c_table[b, h, jj, row]
        if key_mask is not None:
            keep = key_mask[b, torch.clamp(j, 0, last_key)]
            score = torch.where(keep, score, torch.finfo(score.dtype).min)
        if added_keys:
            score = torch.where(j <= offset, score, -float("inf"))
        if causal:
            # The unclamped indices: a real query i < n keeps its real keys j <= i.
            score = torch.where(j <= i, score, -float("inf"))
        return score

    return score_mod


def _run_flex(
    query, key, value, c2p_table, p2c_table, lookup, key_mask, scale, causal=False
):
    n = query.shape[-2]
    on_cpu = query.device.type == "cpu"
    compiled = not on_cpu or query.dtype in _COMPILED_CPU_DTYPES
    if on_cpu and compiled:
        query, key, value, c2p_table, p2c_table, key_mask = _pad_for_cpu_kernel(
            query, key, value, c2p_table, p2c_table, key_mask
        )  # (b, h, m, d), (b, h, m, r), (b, m): m a multiple of 16
    return _run_padded(
        query, key, value, c2p_table, p2c_table, lookup, key_mask, scale, compiled,
        causal,
    )[..., :n, :]  # (b, h, n, d)


def _run_padded(
    query, key, value, c2p_table, p2c_table, lookup, key_mask, scale, compiled,
    causal=False,
):
    score_mod = make_score_mod(
        c2p_table, p2c_table, lookup, key_mask, causal=causal
    )
    if torch.compiler.is_compiling():
        # Inside torch.compile the caller's graph compiles the kernel itself.
        from torch.nn.attention.flex_attention import flex_attention

        block_mask = _full_block_mask(query.shape[-2], str(query.device), 128)
        return flex_attention(
            query, key, value, score_mod=score_mod, block_mask=block_mask, scale=scale
        )
    try:
        flex = _flex_attention(compiled)
        # Each shape, dtype and choice of terms compiles its own kernel: allow more
        # of them than dynamo's default before it would silently fall back to eager.
        with torch._dynamo.config.patch(recompile_limit=_RECOMPILE_LIMIT), \
                warnings.catch_warnings():
            # The uncompiled path (float64 on the CPU) is deliberate: silence torch's
            # advice.
            warnings.filterwarnings(
                "ignore", message=".*flex_attention called without torch.compile"
            )
            block_mask = None
            if compiled:
                block_mask = full_block_mask(query.shape[-2], str(query.device))
            return flex(
                query, key, value,
                score_mod=score_mod, block_mask=block_mask, scale=scale,
            )
    except FlexUnavailableError:
        raise
    except Exception as exc:
        if not _unavailable(exc):
            raise
        first = " ".join(line.strip() for line in str(exc).splitlines()[:2])
        raise FlexUnavailableError(
            f"backend='flex' could not run on {query.device.type} with {query.dtype} "
            f"({type(exc).__name__}: {first}); use backend='gather' instead"
        ) from exc


def heads_contiguous(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Each ``(b, h, n, d)`` tensor laid out head by head (a copy only where needed).

    Shapes:
        tensors: ``(b, h, n, d)`` each; output: the same shapes, contiguous
    """
    return tuple(t.contiguous() for t in tensors)


def _tables(query, key, pos_key, pos_query, scale):
    """Score every query and key against all table rows (the only position work)."""
    c2p_table = p2c_table = None
    if pos_key is not None:
        c2p_table = torch.einsum("bhid,hrd->bhir", query, pos_key * scale)
        # c2p_table: (b, h, i, r)
    if pos_query is not None:
        p2c_table = torch.einsum("bhjd,hrd->bhjr", key, pos_query * scale)
        # p2c_table: (b, h, j, r)
    return c2p_table, p2c_table


class _FlexWithRecomputedBackward(torch.autograd.Function):
    """Forward by flex; backward by recomputing the gather form under autograd."""

    @staticmethod
    def forward(
        ctx, query, key, value, pos_key, pos_query, lookup, key_mask, scale, causal
    ):
        ctx.save_for_backward(query, key, value, pos_key, pos_query, lookup, key_mask)
        ctx.scale = scale
        ctx.causal = causal
        # torch's CPU flex refuses inputs that require grad, even under no_grad:
        # detach them.
        detached = (query.detach(), key.detach(), value.detach())
        query, key, value = heads_contiguous(*detached)  # (b, h, n, d) each
        c2p_table, p2c_table = _tables(query, key, pos_key, pos_query, scale)
        return _run_flex(
            query, key, value, c2p_table, p2c_table, lookup, key_mask, scale, causal
        )

    @staticmethod
    def backward(ctx, grad_out):
        query, key, value, pos_key, pos_query, lookup, key_mask = ctx.saved_tensors
        index = index_from_lookup(lookup)  # (i, j)
        inputs = [
            t.detach().requires_grad_(need) if t is not None else None
            for t, need in zip(
                (query, key, value, pos_key, pos_query), ctx.needs_input_grad
            )
        ]
        with torch.enable_grad():
            query_in, key_in, value_in, pos_key_in, pos_query_in = inputs
            scores = _gather_scores(
                query_in, key_in, pos_key_in, pos_query_in, index, key_mask,
                ctx.scale, ctx.causal,
            )
            out = scores.probs @ value_in  # (b, h, i, d)
            wanted = [t for t in inputs if t is not None and t.requires_grad]
            grads = iter(torch.autograd.grad(out, wanted, grad_out) if wanted else ())
        result = [
            next(grads) if t is not None and t.requires_grad else None for t in inputs
        ]
        return (*result, None, None, None, None)


def flex_disentangled_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    pos_key: torch.Tensor | None,
    pos_query: torch.Tensor | None,
    lookup: torch.Tensor,
    key_mask: torch.Tensor | None,
    scale: float,
    *,
    causal: bool = False,
) -> torch.Tensor:
    """Disentangled attention with FlexAttention; memory linear in ``n``.

    ``lookup`` is ``relpos.distance_lookup(n, ...)``: the table row of distance
    ``i - j`` at ``i - j + n - 1``. ``causal=True``: query ``i`` reads keys
    ``j <= i`` only.

    Shapes:
        query, key, value: ``(b, h, n, d)``; pos_key, pos_query: ``(h, r, d)``
        lookup: ``(2n - 1,)``; key_mask: ``(b, j)`` bool
        output: ``(b, h, n, d)``
    """
    if query.numel() == 0 or key.numel() == 0:
        # Nothing to attend (b = 0 or n = 0): the gather formulation gives the empty
        # output with every input in the graph, so gradients are zeros of their shapes.
        index = index_from_lookup(lookup)  # (i, j)
        probs = _gather_scores(
            query, key, pos_key, pos_query, index, key_mask, scale, causal
        )
        return probs.probs @ value  # (b, h, i, d)
    tensors = (query, key, value, pos_key, pos_query)
    needs_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in tensors
    )
    if needs_grad and query.device.type == "cpu":
        return _FlexWithRecomputedBackward.apply(
            *tensors, lookup, key_mask, scale, causal
        )
    query, key, value = heads_contiguous(query, key, value)  # (b, h, n, d) each
    c2p_table, p2c_table = _tables(query, key, pos_key, pos_query, scale)
    return _run_flex(
        query, key, value, c2p_table, p2c_table, lookup, key_mask, scale, causal
    )


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms | None,
    key_mask: torch.Tensor | None,
    scale: float,
    dropout_p: float,
    *,
    causal: bool = False,
) -> torch.Tensor:
    """The ``flex`` entry of ``relpos.backends``: project the table, then the kernel.

    ``causal=True`` masks the keys after each query inside the ``score_mod``.

    Attention dropout is refused (``ValueError``): the kernel has none.

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``; key_mask: ``(b, j)``
        output: ``(b, h, i, d)``
    """
    if dropout_p > 0:
        raise ValueError(
            "backend='flex' has no attention dropout; set dropout=0.0 or call .eval(), "
            "or use backend='gather'"
        )
    pos_key, pos_query = project(terms)  # (h, r, d) each
    if terms is None:
        n = query.shape[-2]
        lookup = torch.zeros(max(2 * n - 1, 0), dtype=torch.long, device=query.device)
    else:
        lookup = terms.lookup
    return flex_disentangled_attention(
        query, key, value, pos_key, pos_query, lookup, key_mask, scale, causal=causal
    )


__all__ = [
    "FlexUnavailableError",
    "attend",
    "flex_disentangled_attention",
    "full_block_mask",
    "heads_contiguous",
    "make_score_mod",
]
