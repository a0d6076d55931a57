"""relpos.book.gradients.gradient_map: which tensors each score term reaches."""

from __future__ import annotations

import pytest
import torch

import relpos
from relpos.book.gradients import gradient_map


def probe(share_att_key: bool, pos_att_type=("c2p", "p2c")):
    torch.manual_seed(0)
    module = relpos.DisentangledSelfAttention(
        8, 2, max_relative_positions=4, share_att_key=share_att_key,
        pos_att_type=pos_att_type,
    )
    table = torch.randn(8, 8, requires_grad=True)  # (2k, hidden)
    states = torch.randn(1, 5, 8, requires_grad=True)  # (b, n, hidden)
    return gradient_map(module, table, states)


def test_shared_projections_reach_the_table_only_through_the_position_terms():
    flow = probe(share_att_key=True)
    assert set(flow) == {"c2c", "c2p", "p2c"}
    assert not flow["c2c"]["table"] and flow["c2c"]["states"]
    assert flow["c2c"]["query_proj"] and flow["c2c"]["key_proj"]
    # c2p: content query against projected table keys; p2c: table queries, content keys
    assert flow["c2p"]["table"] and flow["c2p"]["query_proj"] and flow["c2p"]["key_proj"]
    assert flow["p2c"]["table"] and flow["p2c"]["query_proj"] and flow["p2c"]["key_proj"]


def test_separate_projections_split_the_position_terms():
    flow = probe(share_att_key=False)
    assert flow["c2p"]["pos_key_proj"] and not flow["c2p"]["pos_query_proj"]
    assert flow["p2c"]["pos_query_proj"] and not flow["p2c"]["pos_key_proj"]
    assert not flow["c2c"]["pos_key_proj"] and not flow["c2c"]["pos_query_proj"]


def test_a_term_the_module_does_not_compute_is_left_out():
    assert set(probe(share_att_key=True, pos_att_type=("c2p",))) == {"c2c", "c2p"}


def test_tensors_without_gradient_are_refused():
    module = relpos.DisentangledSelfAttention(8, 2, max_relative_positions=4)
    with pytest.raises(ValueError, match="table must require gradient"):
        gradient_map(module, torch.randn(8, 8), torch.randn(1, 5, 8, requires_grad=True))
