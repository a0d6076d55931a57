"""attention_at_distance: the share of attention on the key a given distance back."""

from __future__ import annotations

import pytest
import torch

from relpos.book.experiments import Config, TinyModel, attention_at_distance


def flat(scheme: str) -> TinyModel:
    """A model whose first layer attends uniformly: zero queries, keys and table."""
    torch.manual_seed(0)
    model = TinyModel(Config(scheme=scheme, steps=1))
    with torch.no_grad():
        for name, parameter in model.encoder.named_parameters():
            if "query" in name or "key" in name or "rel_embeddings" in name:
                parameter.zero_()
    return model


@pytest.mark.parametrize("scheme", ["none", "absolute", "rotary", "deberta"])
def test_uniform_attention_gives_one_over_n(scheme: str) -> None:
    tokens = torch.randint(16, (4, 20), generator=torch.Generator().manual_seed(1))
    assert attention_at_distance(flat(scheme), tokens, 3) == pytest.approx(1 / 20)


def test_a_head_on_one_distance_puts_its_weight_there() -> None:
    config = Config(scheme="deberta")
    model = TinyModel(config)
    tokens = torch.randint(16, (2, 12), generator=torch.Generator().manual_seed(2))
    shares = [attention_at_distance(model, tokens, d) for d in range(12)]
    assert all(0 <= s <= 1 for s in shares)
    with pytest.raises(ValueError, match="distance must be"):
        attention_at_distance(model, tokens, 12)


@pytest.mark.parametrize("scheme", ["none", "rotary", "deberta"])
def test_flat_logits_leave_no_margin(scheme: str) -> None:
    from relpos.book.experiments import unseen_margin

    tokens = torch.randint(16, (3, 24), generator=torch.Generator().manual_seed(3))
    margins = unseen_margin(flat(scheme), tokens, 3, 8)
    assert margins == pytest.approx([0.0] * 4, abs=1e-5)


def test_unseen_margin_refuses_a_distance_or_length_out_of_range() -> None:
    from relpos.book.experiments import unseen_margin

    tokens = torch.zeros(1, 16, dtype=torch.long)
    with pytest.raises(ValueError, match="train_length"):
        unseen_margin(flat("none"), tokens, 3, 16)
    with pytest.raises(ValueError, match="distance"):
        unseen_margin(flat("none"), tokens, 9, 8)
