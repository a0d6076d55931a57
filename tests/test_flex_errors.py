"""Where FlexAttention cannot run, the flex backend says so and names the alternative."""

from __future__ import annotations

import pytest
import torch

import relpos
import relpos.flex
from relpos.flex import FlexUnavailableError


def _module() -> relpos.DisentangledSelfAttention:
    return relpos.DisentangledSelfAttention(16, 2, max_relative_positions=4, backend="flex").eval()


def test_a_kernel_failure_names_gather(monkeypatch):
    def broken_kernel(*args, **kwargs):
        raise RuntimeError("inductor could not compile this")

    monkeypatch.setattr(relpos.flex, "_flex_attention", lambda compiled: broken_kernel)
    with torch.no_grad(), pytest.raises(FlexUnavailableError, match="backend='gather'") as info:
        _module()(torch.randn(1, 6, 16), torch.randn(8, 16))
    assert "could not run" in str(info.value) and "inductor could not compile this" in str(info.value)


def test_a_torch_without_flex_names_gather(monkeypatch):
    def missing(compiled):
        raise FlexUnavailableError("backend='flex' needs torch.nn.attention.flex_attention; use backend='gather'")

    monkeypatch.setattr(relpos.flex, "_flex_attention", missing)
    with torch.no_grad(), pytest.raises(FlexUnavailableError, match="backend='gather'"):
        _module()(torch.randn(1, 6, 16), torch.randn(8, 16))


def test_flex_refuses_attention_dropout_in_training():
    module = relpos.DisentangledSelfAttention(16, 2, max_relative_positions=4, dropout=0.1, backend="flex")
    with pytest.raises(ValueError, match="dropout"):
        module.train()(torch.randn(1, 6, 16), torch.randn(8, 16))


def test_the_error_is_a_runtime_error():
    assert issubclass(FlexUnavailableError, RuntimeError)
