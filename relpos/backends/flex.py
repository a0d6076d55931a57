"""The ``flex`` backend: every scheme's terms inside one FlexAttention kernel.

A ``score_mod`` adds a scheme's terms to each score inside the kernel. For a
pair ``(b, h, i, j)`` it finds the distance ``rel = qpos[i] - kpos[j]`` and the
row ``lookup[clamp(rel, -L, L) + L]``, then reads small tables at that row:

    c2p_table[b, h, i, r] = Q_i . Pk[r] / sqrt(d * s)        (b, h, i, m)
    p2c_table[b, h, j, r] = K_j . Pq[r] / sqrt(d * s)        (b, h, j, m)
    row_bias[h, r]                                           (h, m)

and adds ``bias(h, rel, qpos[i])`` for a scheme whose bias is a function of the
distance (ALiBi, KERPLE, FIRE). The masks (padding, pairs, documents, causal)
are applied in the same function. Nothing of size ``n x n`` is stored unless
the caller passed an ``n x n`` pair mask. Relative values (Shaw) cannot be
added inside the kernel: the weight of each row is found from the kernel's
log-sum-exp over that row's keys, one more kernel call per row, still linear in
``n`` (torch's compiled CPU kernel returns no log-sum-exp: there, in float32/16,
they take the gather formulation).

Where torch's kernel cannot run, this module says so:
- On the CPU, torch compiles flex only for float32/float16/bfloat16; float64 runs
  torch's uncompiled reference (exact, but it does store ``n x n`` scores). It is
  called without dynamo's capture of the ``score_mod`` (:func:`_dense_reference`):
  the capture took seconds for each new length or set of terms and changes no
  number of a forward without a gradient, the only one this path runs.
- On the CPU, torch's flex kernel has no backward: when a gradient is needed
  there, the attention is computed in the gather formulation (forward and
  backward), with the same result.
- On the CPU, torch 2.13's compiled kernel is wrong when ``n`` is 8 more than a
  multiple of 16; the sequence is padded to a multiple of 16, its extra keys
  masked out (:func:`run_kernel`).
- torch compiles the kernel for each shape and each number the ``score_mod``
  reads. On the CPU every input is padded to buckets of 16 and the lengths are
  tensors (:mod:`relpos.backends.flex_shapes`), so a sequence, or a decoding
  step with a cache, compiles a new kernel only when it crosses a multiple of 16.
  On a GPU no length is padded and each length compiles its own kernel.

Compile and export (torch 2.13, CPU; ``tests/test_compile.py``, ``test_export.py``):
- ``torch.compile(module, fullgraph=True)`` takes the module into one graph for
  every scheme, at any length and with ``dynamic=True``. On the CPU the graph
  holds the gather formulation, not the kernel: torch 2.13's CPU lowering of
  ``flex_attention`` fails on a symbolic length (the recompile that a second
  length brings, or ``dynamic=True``), and on Transformer-XL's captured tensors
  (``NoValidChoicesError``), and a trace cannot tell a symbolic length from a
  fixed one. The result is the same; the memory is the gather kernel's. On a
  GPU the kernel goes into the graph.
- With a gradient on the CPU the module runs the gather formulation (above),
  which compiles like ``gather``, backward included.
- ``torch.export`` with a dynamic length works (the CPU padding to 16 included),
  and so does ONNX export (``dynamo=True``), where ``flex_attention`` becomes
  its dense reference form: onnxruntime then stores the ``n x n`` scores.

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
from typing import Any, Callable

import torch

from ..masks import Mask
from ..scores import value_term
from .flex_shapes import BUCKET, fixed_shapes, pad_to, round_up
from .gather import attend as gather_attend
from .terms import explicit_scores, projected_rows
from .registry import PositionTerms

_COMPILED_CPU_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_RECOMPILE_LIMIT = 64
# torch 2.13's compiled CPU kernel returns wrong numbers (sometimes NaN) when the
# sequence length is 8 more than a multiple of 16 (n = 8, 24, 40, 56, 120, 136
# were seen), even with no score_mod; at multiples of 16 it is right. On the CPU
# the sequence is padded to a multiple of this with keys that are masked out
# (flex_shapes pads to the same multiple, so that there this padding adds nothing).
_CPU_LENGTH_MULTIPLE = BUCKET


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
    return torch.compile(flex_attention, dynamic=False) if compiled else _dense_reference


def _dense_reference(*args: Any, **kwargs: Any) -> Any:
    """torch's uncompiled ``flex_attention`` (its dense form: every score, then
    ``score_mod`` applied to them with ``vmap``) called without dynamo's capture.

    By default torch captures ``score_mod`` with dynamo even here, which takes
    seconds for each new length and set of terms (a decoding step, a packed
    batch) and changes no number. torch offers to skip the capture for
    debugging (``_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG``), with no backward: this
    path runs only without a gradient (:func:`attend`). Where a torch lacks the
    switch, its default path runs.

    Shapes:
        as ``torch.nn.attention.flex_attention.flex_attention``
    """
    import torch.nn.attention.flex_attention as torch_flex

    switch = "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG"
    if not hasattr(torch_flex, switch):  # pragma: no cover - another torch
        return torch_flex.flex_attention(*args, **kwargs)
    before = getattr(torch_flex, switch)
    setattr(torch_flex, switch, True)
    try:
        return torch_flex.flex_attention(*args, **kwargs)
    finally:
        setattr(torch_flex, switch, before)


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
    lookup: torch.Tensor | None,
    key_mask: torch.Tensor | None,
    *,
    causal: bool = False,
    query_positions: torch.Tensor | None = None,
    key_positions: torch.Tensor | None = None,
    row_bias: torch.Tensor | None = None,
    bias: Callable[..., torch.Tensor] | None = None,
    pairs: torch.Tensor | None = None,
    query_documents: torch.Tensor | None = None,
    key_documents: torch.Tensor | None = None,
    query_len: int | torch.Tensor | None = None,
    key_len: int | torch.Tensor | None = None,
    masked_fraction: float = 1.0,
) -> Callable:
    """The ``score_mod``: the terms at row ``lookup[clamp(rel, -L, L) + L]``, the masks.

    Without positions, query ``i`` and key ``j`` sit at ``i`` and ``j`` and
    ``lookup`` is ``relpos.distance_lookup(n)`` (``2n - 1`` rows, ``L = n - 1``).
    Masked pairs (padded keys, ``pairs`` False, another document) get the dtype's
    minimum (times ``masked_fraction``); with ``causal=True`` the keys after the
    query get ``-inf`` after that, as in ``relpos.masks``. The kernel's
    log-sum-exp of a query whose keys are all masked needs ``masked_fraction``
    below 1: it scales scores by ``log2(e)`` inside, and the minimum itself then
    overflows to ``-inf``. ``query_len`` and ``key_len`` are the real lengths
    (the tensors may be longer, ``relpos.backends.flex_shapes``); given as 0-d
    tensors they do not make torch compile a kernel per length.

    Shapes:
        c2p_table: ``(b, h, i, m)``; p2c_table: ``(b, h, j, m)``; lookup: ``(2L + 1,)``
        key_mask: ``(b, j)`` bool; pairs: ``(b, i, j)`` or ``(b, h, i, j)`` bool
        query_positions, query_documents: ``(b or 1, i)``; key_*: ``(b or 1, j)``
        row_bias: ``(h, m)``; query_len, key_len: ints or ``()`` tensors
    """
    reach = 0 if lookup is None else (lookup.shape[0] - 1) // 2
    if query_len is None:
        query_len = key_len = reach + 1
    last_query, last_key = query_len - 1, key_len - 1
    shift = key_len - query_len  # queries are the last query_len positions
    batched_q = query_positions is not None and query_positions.shape[0] > 1
    batched_k = key_positions is not None and key_positions.shape[0] > 1

    def score_mod(score, b, h, i, j):
        # The kernel works in tiles and may evaluate this at i, j past the ends (the
        # tile's padding, masked afterwards): clamp every index into its tensor, or
        # those evaluations read memory past the tables.
        ii = i.clamp(min=0).clamp(max=last_query)
        jj = j.clamp(min=0).clamp(max=last_key)
        if query_positions is None:
            qpos, kpos = ii + shift, jj
        else:
            qpos = query_positions[b if batched_q else 0, ii]
            kpos = key_positions[b if batched_k else 0, jj]
        rel = qpos - kpos
        if lookup is not None:
            row = lookup[torch.clamp(rel, -reach, reach) + reach]
            if c2p_table is not None:
                score = score + c2p_table[b, h, ii, row]
            if p2c_table is not None:
                score = score + p2c_table[b, h, jj, row]
            if row_bias is not None:
                score = score + row_bias[h, row].to(score.dtype)
        if bias is not None:
            score = score + bias(h, rel, qpos).to(score.dtype)
        keep = None
        if key_mask is not None:
            keep = key_mask[b, jj]
        if pairs is not None:
            pair = pairs[b, ii, jj] if pairs.dim() == 3 else pairs[b, h, ii, jj]
            keep = pair if keep is None else keep & pair
        if query_documents is not None:
            same = query_documents[b, ii] == key_documents[b, jj]
            keep = same if keep is None else keep & same
        if keep is not None:
            lowest = torch.finfo(score.dtype).min * masked_fraction
            score = torch.where(keep, score, lowest)
        # Keys added by the CPU padding get -inf, below a masked real key's minimum.
        score = torch.where(j <= last_key, score, -float("inf"))
        if causal:
            score = torch.where(j <= i + shift, score, -float("inf"))
        return score

    return score_mod


def run_kernel(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    score_mod: Callable,
    scale: float,
    *,
    return_lse: bool = False,
):
    """Call FlexAttention (compiled where torch compiles it) with ``score_mod``.

    On the CPU the sequence is padded to a multiple of 16 (torch 2.13's compiled
    CPU kernel is wrong otherwise); ``score_mod`` must give ``-inf`` to the keys
    past the real ones (:func:`make_score_mod` does, from ``key_len``).

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``; with ``return_lse`` also ``(b, h, i)``
    """
    i = query.shape[-2]
    on_cpu = query.device.type == "cpu"
    compiled = not on_cpu or query.dtype in _COMPILED_CPU_DTYPES
    if on_cpu and compiled:
        step = _CPU_LENGTH_MULTIPLE
        query = pad_to(query, -2, round_up(i, step))  # (b, h, i', d)
        key = pad_to(key, -2, round_up(key.shape[-2], step))  # (b, h, j', d)
        value = pad_to(value, -2, key.shape[-2])  # (b, h, j', d)
    result = _call(query, key, value, score_mod, scale, compiled, return_lse)
    if return_lse:
        out, lse = result
        return out[..., :i, :], lse[..., :i]
    return result[..., :i, :]  # (b, h, i, d)


def _call(query, key, value, score_mod, scale, compiled, return_lse):
    lse = {}
    if return_lse:
        from torch.nn.attention.flex_attention import AuxRequest

        lse = {"return_aux": AuxRequest(lse=True)}
    result = _call_kernel(query, key, value, score_mod, scale, compiled, lse)
    if return_lse:
        out, aux = result
        return out, aux.lse
    return result


def _call_kernel(query, key, value, score_mod, scale, compiled, lse):
    if torch.compiler.is_compiling():
        # Inside torch.compile the caller's graph compiles the kernel itself.
        from torch.nn.attention.flex_attention import flex_attention

        return flex_attention(
            query, key, value, score_mod=score_mod, scale=scale, **lse
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
            if compiled and query.shape[-2] == key.shape[-2]:
                block_mask = full_block_mask(query.shape[-2], str(query.device))
            return flex(
                query, key, value,
                score_mod=score_mod, block_mask=block_mask, scale=scale, **lse,
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


def row_scores(
    query: torch.Tensor,
    key: torch.Tensor,
    pos_key: torch.Tensor | None,
    pos_query: torch.Tensor | None,
    scale: float,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Every query and key against every row (the only position work): the tables.

    Shapes:
        query: ``(b, h, i, d)``; key: ``(b, h, j, d)``; pos_*: ``(h, m, d)``
        output: ``c2p_table (b, h, i, m)``, ``p2c_table (b, h, j, m)`` (or None)
    """
    c2p_table = p2c_table = None
    if pos_key is not None:
        c2p_table = torch.einsum("bhid,hmd->bhim", query, pos_key * scale)
    if pos_query is not None:
        p2c_table = torch.einsum("bhjd,hmd->bhjm", key, pos_query * scale)
    return c2p_table, p2c_table


def _score_mod(lengths, terms, mask, c2p_table, p2c_table, fraction=1.0):
    mask = Mask() if mask is None else mask
    fields = {}
    if terms is not None:
        fields = dict(
            query_positions=terms.query_positions,
            key_positions=terms.key_positions,
            row_bias=terms.row_bias,
            bias=terms.bias,
        )
    return make_score_mod(
        c2p_table, p2c_table, None if terms is None else terms.lookup, mask.keys,
        causal=mask.causal, pairs=mask.pairs,
        query_documents=mask.query_documents, key_documents=mask.key_documents,
        query_len=lengths[0], key_len=lengths[1],
        masked_fraction=fraction, **fields,
    )


def _row_weights(query, key, value, score_mod, scale, terms):
    """``sum_j p_ij`` over the keys of each row: one more kernel call per row.

    The weights the value term reads (``relpos.scores.value_term``): the weight
    of row ``r`` for query ``i`` is the softmax over the rows of
    ``lse_r``, the log-sum-exp over the keys whose row is ``r`` alone: the share
    of the query's probability that falls on those keys (a row no key reads has
    ``lse_r = -inf`` and weight 0).

    Shapes:
        output: ``(b, h, i, m)``
    """
    which = torch.zeros((), dtype=torch.long, device=query.device)
    reach = terms.reach
    batched_q = terms.query_positions.shape[0] > 1
    batched_k = terms.key_positions.shape[0] > 1
    last_query, last_key = query.shape[-2] - 1, key.shape[-2] - 1

    def only_row(score, b, h, i, j):
        score = score_mod(score, b, h, i, j)
        ii = torch.clamp(i, 0, last_query)
        jj = torch.clamp(j, 0, last_key)
        rel = (
            terms.query_positions[b if batched_q else 0, ii]
            - terms.key_positions[b if batched_k else 0, jj]
        )
        row = terms.lookup[torch.clamp(rel, -reach, reach) + reach]
        return torch.where(row == which, score, -float("inf"))

    per_row = []
    for r in range(terms.value_rows.shape[1]):
        which.fill_(r)
        _, lse_r = run_kernel(query, key, value, only_row, scale, return_lse=True)
        per_row.append(lse_r)  # (b, h, i)
    return torch.stack(per_row, dim=-1).softmax(-1)  # (b, h, i, m)


def _traced_on_cpu(query: torch.Tensor) -> bool:
    """Whether the caller's ``torch.compile`` traces this call on the CPU.

    torch 2.13's CPU template lowers the kernel for fixed lengths only: under
    ``dynamic=True``, or at the recompile a second length brings, inductor fails
    (``LoweringException: 'Add' object has no attribute 'get_name'``), and a
    trace cannot tell a symbolic length from a fixed one. So inside a caller's
    graph on the CPU the gather formulation runs, with the same result, at any
    length; relpos's own compiled kernel (outside a caller's graph) and a GPU's
    are unchanged.
    """
    return query.device.type == "cpu" and torch.compiler.is_compiling()


def attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    terms: PositionTerms | None,
    mask: Mask | None,
    scale: float,
    dropout_p: float,
) -> torch.Tensor:
    """The ``flex`` entry of ``relpos.backends``: score the rows, then the kernel.

    Attention dropout is refused (``ValueError``): the kernel has none. On the CPU
    with a gradient needed, or inside a caller's ``torch.compile``, the gather
    formulation computes the same result (torch's CPU flex has no backward, and
    its CPU template lowers no symbolic length: ``_traced_on_cpu``).

    Shapes:
        query: ``(b, h, i, d)``; key, value: ``(b, h, j, d)``
        output: ``(b, h, i, d)``
    """
    if dropout_p > 0:
        raise ValueError(
            "backend='flex' has no attention dropout; set dropout=0.0 or call .eval(), "
            "or use backend='gather'"
        )
    pos_key, pos_query = projected_rows(terms)  # (h, m, d) each
    tensors = [query, key, value, pos_key, pos_query]
    if terms is not None:
        tensors += [terms.row_bias, terms.value_rows]
    needs_grad = torch.is_grad_enabled() and (
        any(t is not None and t.requires_grad for t in tensors)
        or (terms is not None and terms.bias is not None)
    )
    empty = query.numel() == 0 or key.numel() == 0
    on_cpu = query.device.type == "cpu"
    # torch's compiled CPU kernel returns no log-sum-exp, which the row weights of
    # relative values need: there they take the gather formulation too.
    no_lse = (
        on_cpu and query.dtype in _COMPILED_CPU_DTYPES
        and terms is not None and terms.value_rows is not None
    )
    if empty:
        # Nothing to attend (b = 0 or n = 0): the explicit scores give the empty
        # output with every input in the graph (gradients: zeros of their shapes).
        return explicit_scores(query, key, terms, mask, scale).probs @ value
    if (needs_grad and on_cpu) or no_lse or _traced_on_cpu(query):
        return gather_attend(query, key, value, terms, mask, scale, 0.0)
    i = query.shape[-2]
    lengths = (i, key.shape[-2])
    compiled_here = on_cpu and query.dtype in _COMPILED_CPU_DTYPES
    if compiled_here and not torch.compiler.is_compiling():
        # Compiled here, not inside the caller's graph: one kernel per bucket of 16
        # positions, not one per length (flex_shapes).
        query, key, value, pos_key, pos_query, terms, mask, *lengths = fixed_shapes(
            query, key, value, pos_key, pos_query, terms, mask
        )
    query, key, value = heads_contiguous(query, key, value)  # (b, h, n, d) each
    c2p_table, p2c_table = row_scores(query, key, pos_key, pos_query, scale)
    values = terms is not None and terms.value_rows is not None
    score_mod = _score_mod(
        lengths, terms, mask, c2p_table, p2c_table, 0.5 if values else 1.0
    )
    if not values:
        return run_kernel(query, key, value, score_mod, scale)[..., :i, :]
    out = run_kernel(query, key, value, score_mod, scale)
    weight = _row_weights(query, key, value, score_mod, scale, terms)  # (b, h, i, m)
    return out + value_term(weight, terms.value_rows, None)  # (b, h, i, d)


__all__ = [
    "FlexUnavailableError",
    "attend",
    "full_block_mask",
    "heads_contiguous",
    "make_score_mod",
    "row_scores",
    "run_kernel",
]
