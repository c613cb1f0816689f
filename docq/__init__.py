"""docq: bulk transformer inference over documents, in front of NVIDIA Triton.

The core package holds what the API and the workers share: settings, the job store,
the public schemas, the error tree and the Celery app both sides enqueue through.
"""

__version__ = "0.1.0"
