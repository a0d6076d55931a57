"""deberta-emd: DeBERTa's enhanced mask decoder in the tiny model."""

from __future__ import annotations

import pytest
import torch

from relpos.book.experiments import Config, TinyModel, train
from relpos.book.experiments.emd import EMD_PASSES, EnhancedMaskDecoder
from relpos.book.experiments.schemes import LearnedPositions

from _tiny import TINY, one_thread  # noqa: F401  (autouse fixture)



def model_of(scheme: str = "deberta-emd", **changes) -> TinyModel:
    torch.manual_seed(0)
    return TinyModel(Config(scheme=scheme, **{**TINY, **changes})).eval()


def randomise_positions(model: TinyModel) -> None:
    """Give the absolute table rows far from zero, so that its effect is plain."""
    with torch.no_grad():
        model.encoder.positions.weight.normal_(0.0, 1.0)


@pytest.mark.parametrize("setting", ["encoder", "causal"])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_output_is_two_passes_of_the_last_layer(num_layers, setting):
    model = model_of(num_layers=num_layers, setting=setting)
    randomise_positions(model)
    encoder = model.encoder
    assert isinstance(encoder, EnhancedMaskDecoder) and EMD_PASSES == 2
    tokens = torch.randint(16, (3, 9))
    hidden = model.embed(tokens)  # (b, n, hidden)
    table = encoder.rel_embeddings()
    # by hand, from the module's own parts
    for layer in encoder.layers[:-1]:
        hidden = layer(hidden, rel_embeddings=table)
    query = hidden + encoder.positions.weight[:9]
    first = encoder.layers[-1](hidden, query_states=query, rel_embeddings=table)
    second = encoder.layers[-1](hidden, query_states=first, rel_embeddings=table)
    assert torch.allclose(encoder(model.embed(tokens)), second, atol=1e-6)
    assert torch.allclose(model(tokens), model.classifier(second), atol=1e-6)
    # the passes differ from the last layer run as an ordinary layer
    plain = encoder.layers[-1](hidden, rel_embeddings=table)
    assert not torch.allclose(second, plain, atol=1e-3)
    assert not torch.allclose(second, first, atol=1e-3)


def test_keys_and_values_come_from_the_last_layers_input():
    model = model_of()
    randomise_positions(model)
    encoder = model.encoder
    tokens = torch.randint(16, (2, 9))
    hidden = model.embed(tokens)
    table = encoder.rel_embeddings()
    query = hidden + encoder.positions.weight[:9]
    # keys and values from hidden + z instead: what adding z at the input would do
    wrong = encoder.layers[-1](query, query_states=query, rel_embeddings=table)
    wrong = encoder.layers[-1](query, query_states=wrong, rel_embeddings=table)
    assert not torch.allclose(encoder(hidden), wrong, atol=1e-3)


def test_absolute_positions_reach_the_output_only_through_the_decoder():
    model = model_of(num_layers=2)
    randomise_positions(model)
    tokens = torch.randint(16, (2, 9))
    hidden = model.embed(tokens)
    encoded, output = model.encoder.encode(hidden), model.encoder(hidden)
    with torch.no_grad():
        model.encoder.positions.weight.zero_()
    assert torch.equal(model.embed(tokens), hidden)  # none at the input
    assert torch.equal(model.encoder.encode(hidden), encoded)
    assert not torch.allclose(model.encoder(hidden), output, atol=1e-3)


def test_emd_adds_only_the_absolute_table_to_deberta():
    deberta, emd = model_of("deberta"), model_of()
    shapes = {name: p.shape for name, p in deberta.named_parameters()}
    emd_shapes = {name: p.shape for name, p in emd.named_parameters()}
    assert emd_shapes == {**shapes, "encoder.positions.weight": torch.Size([16, 8])}
    assert isinstance(emd.encoder.positions, LearnedPositions)
    assert emd.encoder.config == deberta.encoder.config
    # one relative table, the encoder's, read by every layer and the decoder
    assert sum("table.weight" in name for name in emd_shapes) == 1
    std = emd.encoder.positions.weight.std().item()
    assert 0.01 < std < 0.04  # initialised like the other embeddings (0.02)


def test_positions_must_be_a_module():
    with pytest.raises(TypeError, match="positions must be an nn.Module"):
        EnhancedMaskDecoder(1, "z", hidden_size=8, num_heads=2, intermediate_size=16)


def test_emd_trains_on_the_absolute_task():
    # 60 steps: the loss falls to 0.1-0.32 of its start for seeds 0-4, while
    # deberta (no absolute position anywhere) keeps 0.68-0.73 of it
    sizes = dict(steps=60, train_size=64, hidden_size=16, batch_size=16)
    config = Config(
        task="absolute",
        scheme="deberta-emd",
        **{**TINY, **sizes, "learning_rate": 1e-2},
    )
    emd = train(config).losses
    deberta = train(config.replace(scheme="deberta")).losses
    first, last = sum(emd[:5]) / 5, sum(emd[-5:]) / 5
    assert last < 0.5 * first, (first, last)
    assert last < 0.7 * sum(deberta[-5:]) / 5, (last, deberta[-5:])
