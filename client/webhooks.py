"""A receiver's side of docq's webhooks: the event of a delivery, once its signature holds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import standardwebhooks

from client.errors import InvalidSignature


def verify_webhook(body: bytes | str, headers: Mapping[str, str], secret: str) -> dict[str, Any]:
    """The event of a webhook delivery (`{"type", "data"}`) once its Standard Webhooks
    signature and timestamp verify with the job's `whsec_` secret; else InvalidSignature."""
    try:
        event = standardwebhooks.Webhook(secret).verify(body, dict(headers))
    except (standardwebhooks.WebhookVerificationError, RuntimeError, ValueError) as exc:
        # RuntimeError and ValueError (binascii.Error): a secret that is not whsec_ base64.
        raise InvalidSignature(str(exc) or "invalid webhook signature") from None
    if not isinstance(event, dict):
        raise InvalidSignature("the webhook body is not a JSON object")
    return event
