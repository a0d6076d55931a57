"""Where FlexAttention cannot run, the flex backend says so and names the alternative;
any other error (a bug) comes through unchanged."""

from __future__ import annotations

import functools
import re
import sys

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import relpos
import relpos.backends.flex
from relpos.backends.flex import FlexUnavailableError


def _module() -> relpos.DisentangledSelfAttention:
    return relpos.DisentangledSelfAttention(16, 2, max_relative_positions=4, backend="flex").eval()


def _kernel_raising(exc: Exception):
    def broken_kernel(*args, **kwargs):
        raise exc

    return lambda compiled: broken_kernel


def _inductor_failure() -> BackendCompilerFailed:
    def inductor():
        pass

    return BackendCompilerFailed(inductor, RuntimeError("could not compile this"), None)


@pytest.mark.parametrize(
    "exc",
    [
        _inductor_failure(),
        NotImplementedError("FlexAttention does not support this dtype"),
        ValueError("FlexAttention is only supported on CUDA, CPU"),
        RuntimeError("flex_attention requires dynamo support"),
    ],
)
def test_an_unavailable_kernel_names_gather(monkeypatch, exc):
    monkeypatch.setattr(relpos.backends.flex, "_flex_attention", _kernel_raising(exc))
    with torch.no_grad(), pytest.raises(RuntimeError) as info:
        _module()(torch.randn(1, 6, 16), rel_embeddings=torch.randn(8, 16))
    # Only what relpos adds around torch's message: the verdict, where it ran, the
    # type of torch's error, and the alternative.
    assert isinstance(info.value, FlexUnavailableError)
    text = str(info.value)
    assert text.startswith("backend='flex' could not run on cpu with torch.float32 (")
    assert f"({type(exc).__name__}: " in text
    assert text.endswith("; use backend='gather' instead")
    assert info.value.__cause__ is exc


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("a bug in score_mod: index out of range"),
        ValueError("Expect query and key/value to have the same embedding dimension"),
        IndexError("index 9 is out of bounds"),
    ],
)
def test_a_real_error_is_not_relabelled(monkeypatch, exc):
    monkeypatch.setattr(relpos.backends.flex, "_flex_attention", _kernel_raising(exc))
    with torch.no_grad(), pytest.raises(type(exc)) as info:
        _module()(torch.randn(1, 6, 16), rel_embeddings=torch.randn(8, 16))
    assert info.value is exc
    assert not isinstance(info.value, FlexUnavailableError)


def test_a_torch_without_flex_names_gather(monkeypatch):
    # A torch without FlexAttention: the import of its module fails. A fresh cache of
    # the kernel loader (restored afterwards) so that relpos imports it again.
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", None)
    loader = relpos.backends.flex._flex_attention
    monkeypatch.setattr(
        relpos.backends.flex, "_flex_attention", functools.cache(loader.__wrapped__)
    )
    with torch.no_grad(), pytest.raises(RuntimeError) as info:
        _module()(torch.randn(1, 6, 16), rel_embeddings=torch.randn(8, 16))
    assert isinstance(info.value, FlexUnavailableError)
    text = str(info.value)
    assert re.search(r"torch >= 2\.5.*backend='gather'", text), text
    assert f"this is torch {torch.__version__}" in text
    assert isinstance(info.value.__cause__, ImportError)


def test_flex_refuses_attention_dropout_in_training():
    module = relpos.DisentangledSelfAttention(16, 2, max_relative_positions=4, dropout=0.1, backend="flex")
    with pytest.raises(ValueError, match="dropout"):
        module.train()(torch.randn(1, 6, 16), rel_embeddings=torch.randn(8, 16))


@pytest.mark.parametrize("shape", [(0, 6, 16), (2, 0, 16), (0, 0, 16)])
@pytest.mark.parametrize("share", [True, False])
def test_empty_input_has_zero_gradients_of_the_right_shapes(shape, share):
    module = relpos.DisentangledSelfAttention(
        16, 2, max_relative_positions=4, share_att_key=share, backend="flex",
        own_table=False,
    ).eval()
    x = torch.randn(shape, requires_grad=True)
    table = torch.randn(8, 16, requires_grad=True)
    mask = torch.ones(shape[:2])
    out = module(x, mask, rel_embeddings=table)
    assert out.shape == shape
    weights = [x, table, *module.parameters()]
    grads = torch.autograd.grad(out.sum(), weights, allow_unused=False)
    for weight, grad in zip(weights, grads):
        assert grad.shape == weight.shape and not grad.any()

