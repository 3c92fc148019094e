"""Actor and critic (paper Fig. 9), in PyTorch.

The actor is a three-layer MLP applied to each job's feature vector on its own, so its scores do not
depend on where a job sits in the queue (permutation-equivariant) and any queue length can be scored
in chunks. The critic embeds each job's critic features, pools them over the valid jobs (mean and
max; the paper flattens a 256x5 matrix instead, which ties the value to queue order) and maps the
pooled vector to one value.
"""

from __future__ import annotations

import torch
from torch import nn


class Actor(nn.Module):
    def __init__(self, in_dim: int, hidden: int = 64) -> None:
        """``hidden`` 0: one linear layer, a weighted sum of the inputs an admin can read (``train.cem``)."""
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden // 2), nn.Tanh(),
            nn.Linear(hidden // 2, 1),
        ) if hidden > 0 else nn.Sequential(nn.Linear(in_dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: [..., jobs, features] -> scores [..., jobs] (higher = run first)."""
        out: torch.Tensor = self.net(x)
        return out.squeeze(-1)


class Critic(nn.Module):
    def __init__(self, in_dim: int, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh())
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``x``: [batch, jobs, features], ``mask``: [batch, jobs] (True = a real job) -> [batch]."""
        h = self.embed(x)
        m = mask.unsqueeze(-1).to(h.dtype)
        count = m.sum(dim=1).clamp(min=1.0)
        mean = (h * m).sum(dim=1) / count
        maxed = h.masked_fill(m == 0, -1e4).amax(dim=1)
        maxed = torch.where(count > 0, maxed, torch.zeros_like(maxed))
        value: torch.Tensor = self.head(torch.cat([mean, maxed], dim=-1))
        return value.squeeze(-1)


def plackett_luce_logp(scores: torch.Tensor, mask: torch.Tensor, picks: torch.Tensor) -> torch.Tensor:
    """Log-probability of the first picks of a ranking under Plackett-Luce.

    ``scores``/``mask``: [batch, jobs]; ``picks``: [batch, M] job indices in order, -1 where a step
    made fewer than M picks. P(pick a_k | a_1..a_{k-1}) = softmax over the jobs not yet picked.
    """
    neg = torch.finfo(scores.dtype).min / 4
    avail = mask.clone()
    logp = torch.zeros(scores.shape[0], dtype=scores.dtype)
    for k in range(picks.shape[1]):
        idx = picks[:, k]
        valid = idx >= 0
        safe = idx.clamp(min=0)
        lse = torch.logsumexp(scores.masked_fill(~avail, neg), dim=1)
        chosen = scores.gather(1, safe.unsqueeze(1)).squeeze(1)
        logp = logp + torch.where(valid, chosen - lse, torch.zeros_like(chosen))
        taken = torch.zeros_like(avail).scatter(1, safe.unsqueeze(1), valid.unsqueeze(1))
        avail = avail & ~taken
    return logp


def first_pick_entropy(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Entropy of the first pick's softmax: the exploration bonus (the full ranking's entropy has no
    closed form)."""
    neg = torch.finfo(scores.dtype).min / 4
    logp = torch.log_softmax(scores.masked_fill(~mask, neg), dim=1)
    p = logp.exp() * mask
    return -(p * logp.masked_fill(~mask, 0.0)).sum(dim=1)
