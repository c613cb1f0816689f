"""The webhook receiver of the fault runs' client (bench/faults/client.py): a signed delivery
is accepted and written down, a forged one is answered 401 and written down as such."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx
from standardwebhooks import Webhook

from bench.faults.client import VerifyingReceiver

SECRET = "whsec_" + "dGVzdC10ZXN0LXRlc3QtdGVzdC10ZXN0LXRlc3QtMTI="


def signed(webhook_id: str, body: bytes, secret: str = SECRET) -> dict[str, str]:
    at = dt.datetime.now(dt.UTC)
    signature = Webhook(secret).sign(webhook_id, at, body.decode())
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


def test_accepted_and_forged_deliveries_are_recorded() -> None:
    records: list[dict[str, Any]] = []
    receiver = VerifyingReceiver(lambda **r: records.append(r), SECRET)
    event = {"type": "job.succeeded", "data": {"id": "j1", "status": "succeeded",
                                               "progress": {"documents_done": 3}}}  # fmt: skip
    body = json.dumps(event).encode()
    with receiver.serve("127.0.0.1", "/hooks/fleet") as url:
        assert url.endswith("/hooks/fleet")
        ok = httpx.post(url, content=body, headers=signed("msg_1", body))
        forged = httpx.post(url, content=body, headers=signed("msg_2", body, SECRET[:-4] + "MTM="))
    assert (ok.status_code, forged.status_code) == (200, 401)
    assert records == [
        {"webhook_id": "msg_1", "type": "job.succeeded", "job": "j1", "status": "succeeded",
         "done": 3},
        {"bad_signature": True},
    ]  # fmt: skip
