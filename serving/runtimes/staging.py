"""How the flat engine's inputs reach the GPU: one pinned host buffer per batch, two in
turn, so that a batch is staged while the last one's copy may still wait (overlap)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class Staging:
    """One execute()'s flat inputs in a pinned host buffer, copied in one transfer.

    Layout for `tokens` and `windows`: ids [tokens] | positions [tokens] | offsets
    [windows + 1] | order [windows], all int64 (the offsets become int32 on the device;
    `order`: each request window's index among the laid-out ones). Tokens past the batch's
    own are id 0 at position 0 in no window; windows past its own are empty (offsets repeat
    the last) and their logits, read from window 0, are dropped.

    On a GPU the host buffer is one of two slots, used in turn: the next batch is staged
    while this one's copy may still wait behind the kernels of the one before (overlap),
    and a slot is written only once its last copy ran (an event says so)."""

    def __init__(self, tokens: int, windows: int, device: str) -> None:
        self.capacity, self.device = (tokens, windows), device
        size = 2 * tokens + 2 * windows + 1
        self.device_buffer = torch.zeros(size, dtype=torch.int64)
        self.hosts = [self.device_buffer]  # a CPU instance reads the host buffer itself
        self.copied: list[Any] = [None]
        if device != "cpu":
            self.hosts = [torch.zeros(size, dtype=torch.int64).pin_memory() for _ in range(2)]
            self.copied = [torch.cuda.Event() for _ in self.hosts]
            self.device_buffer = torch.zeros(size, dtype=torch.int64, device=device)
        self.turn = 0

    @staticmethod
    def views(buffer: torch.Tensor, tokens: int, windows: int) -> tuple[torch.Tensor, ...]:
        """ids, positions, offsets, order: views of `buffer` laid out as above."""
        ids, pos, cu, order = buffer[: 2 * tokens + 2 * windows + 1].split(
            [tokens, tokens, windows + 1, windows]
        )
        return ids, pos, cu, order

    def stage(
        self,
        ids: np.ndarray,
        pos: np.ndarray,
        cu: np.ndarray,
        tokens: int,
        windows: int,
        order: np.ndarray | None = None,
    ) -> tuple[torch.Tensor, ...]:
        """The inputs laid out for `tokens` x `windows` on the device (one copy): views of
        the device buffer, the offsets still int64; `order` (None: as laid out) as
        flat.full_first gives it."""
        n, t = cu.size - 1, int(cu[-1])
        host, copied = self.hosts[self.turn], self.copied[self.turn]
        self.turn = (self.turn + 1) % len(self.hosts)
        if copied is not None:
            copied.synchronize()  # this slot's last copy has run (at once unless overlapped)
        h_ids, h_pos, h_cu, h_order = (v.numpy() for v in self.views(host, tokens, windows))
        h_ids[:t], h_ids[t:] = ids, 0
        h_pos[:t], h_pos[t:] = pos, 0
        h_cu[: n + 1], h_cu[n + 1 :] = cu, t
        h_order[:n], h_order[n:] = np.arange(n) if order is None else order, 0
        used = 2 * tokens + 2 * windows + 1
        if copied is not None:
            self.device_buffer[:used].copy_(host[:used], non_blocking=True)
            copied.record(torch.cuda.current_stream(self.device))
        return self.views(self.device_buffer, tokens, windows)
