"""The ``2k``-row relative-position table and its per-pair lookup.

Row ``r`` of the table holds the embedding of distance ``r - k``: row 0 is
distance ``-k`` (and everything further ahead), row ``k`` is distance 0, row
``2k - 1`` is distance ``k - 1`` (and everything further behind).

Shapes:
    k: max_relative_positions; hidden: embedding width; n: sequence length
"""

from __future__ import annotations


import torch
from torch import nn

from .checks import check_choice, check_int, check_int_tensor
from .positions import delta, relative_position_index

INITS = ("normal", "sinusoidal")


def sinusoidal_table(max_relative_positions: int, hidden_size: int) -> torch.Tensor:
    """Fixed sine/cosine features of the distance ``r - k`` held by each row ``r``.

    Column ``2m`` is ``sin(dist / 10000^(2m / hidden))`` and column ``2m + 1`` the
    matching cosine, as in the original Transformer, but of the signed distance
    rather than an absolute position. The dot product of two rows then depends
    only on the difference of their distances.

    Shapes:
        output: ``(2 * max_relative_positions, hidden_size)``
    """
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    hidden = check_int("hidden_size", hidden_size, minimum=1)
    distance = torch.arange(-k, k, dtype=torch.float64)[:, None]  # (2k, 1)
    pairs = torch.arange(0, hidden, 2, dtype=torch.float64)  # (ceil(hidden / 2),)
    angle = distance / torch.pow(10000.0, pairs / hidden)  # (2k, ceil(hidden / 2))
    table = torch.empty(2 * k, hidden, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : hidden // 2])
    return table.to(torch.get_default_dtype())


class RelativePositionEmbedding(nn.Module):
    """A learnable table of ``2k`` relative-position embeddings.

    Args:
        max_relative_positions: ``k``; distances are clipped to ``[-k, k - 1]``.
        hidden_size: width of each embedding.
        init: ``"normal"`` (std 0.02, as DeBERTa initialises its weights) or
            ``"sinusoidal"`` (``sinusoidal_table``).

    Attributes:
        weight: the table, an ``nn.Parameter`` of shape ``(2k, hidden_size)``.

    Shapes:
        weight: ``(2k, hidden)``
        output: ``(seq_len, seq_len, hidden)``, from ``forward(seq_len)``
    """

    def __init__(
        self,
        max_relative_positions: int = 512,
        hidden_size: int = 768,
        init: str = "normal",
    ) -> None:
        super().__init__()
        self.max_relative_positions = check_int(
            "max_relative_positions", max_relative_positions, minimum=1
        )
        self.hidden_size = check_int("hidden_size", hidden_size, minimum=1)
        self.init = check_choice("init", init, INITS)
        self.weight = nn.Parameter(
            torch.empty(2 * self.max_relative_positions, self.hidden_size)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill the table again according to ``self.init``."""
        with torch.no_grad():
            if self.init == "sinusoidal":
                self.weight.copy_(
                    sinusoidal_table(self.max_relative_positions, self.hidden_size)
                )
            else:
                nn.init.normal_(self.weight, mean=0.0, std=0.02)

    def forward(self, seq_len: int) -> torch.Tensor:
        """The embedding of every (query, key) pair: ``weight[delta(i - j)]``.

        This is the literal construction: it stores ``seq_len**2 * hidden``
        numbers. The attention backends other than ``"naive"`` never build it.

        Shapes:
            output: ``(seq_len, seq_len, hidden)``
        """
        seq_len = check_int("seq_len", seq_len, minimum=0)
        index = relative_position_index(
            seq_len,
            max_relative_positions=self.max_relative_positions,
            device=self.weight.device,
        )  # (i, j)
        return self.weight[index]  # (i, j, hidden)

    def extra_repr(self) -> str:
        return (
            f"max_relative_positions={self.max_relative_positions}, "
            f"hidden_size={self.hidden_size}, init={self.init!r}"
        )


def row_cosine_similarity(
    weight: torch.Tensor,
    max_relative_positions: int,
    distances: range | list[int] = range(-16, 16),
) -> torch.Tensor:
    """Cosine similarity between the table rows of the given distances.

    Entry ``[a, b]`` compares the embedding of distance ``distances[a]`` with
    that of ``distances[b]`` (rows ``delta(distance)`` of ``weight``).

    Shapes:
        weight: ``(2k, hidden)``
        output: ``(len(distances), len(distances))``
    """
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    if (
        not isinstance(weight, torch.Tensor)
        or weight.dim() != 2
        or weight.shape[0] != 2 * k
    ):
        got = (
            tuple(weight.shape)
            if isinstance(weight, torch.Tensor)
            else type(weight).__name__
        )
        raise ValueError(
            "weight must have shape (2 * max_relative_positions, hidden) = "
            f"({2 * k}, hidden), got {got}"
        )
    if isinstance(distances, torch.Tensor):
        distances = check_int_tensor("distances", distances)
        if distances.dim() != 1:
            got = tuple(distances.shape)
            raise ValueError(f"distances must be one-dimensional, got shape {got}")
        distances = distances.tolist()
    if isinstance(distances, (str, bytes)) or not hasattr(distances, "__iter__"):
        got = type(distances).__name__
        raise TypeError(f"distances must be a range or a list of ints, got {got}")
    distances = [check_int("distances' entries", d) for d in distances]
    rows = delta(torch.tensor(distances, dtype=torch.long), k)  # (m,)
    picked = torch.nn.functional.normalize(
        weight.detach()[rows].double(), dim=-1
    )  # (m, hidden)
    return picked @ picked.T  # (m, m)


def per_pair_memory_bytes(seq_len: int, hidden_size: int, element_size: int = 4) -> int:
    """Bytes of the ``(n, n, hidden)`` per-pair tensor."""
    n = check_int("seq_len", seq_len, minimum=0)
    hidden = check_int("hidden_size", hidden_size, minimum=1)
    return n * n * hidden * check_int("element_size", element_size, minimum=1)


def table_memory_bytes(
    max_relative_positions: int, hidden_size: int, element_size: int = 4
) -> int:
    """Bytes of the ``(2k, hidden)`` table."""
    k = check_int("max_relative_positions", max_relative_positions, minimum=1)
    hidden = check_int("hidden_size", hidden_size, minimum=1)
    return 2 * k * hidden * check_int("element_size", element_size, minimum=1)


__all__ = [
    "RelativePositionEmbedding",
    "sinusoidal_table",
    "row_cosine_similarity",
    "per_pair_memory_bytes",
    "table_memory_bytes",
    "INITS",
]
