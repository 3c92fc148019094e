"""Job and cluster features for the learned policy (paper §3.2, Table 3), one module for the simulator
and the daemon. See docs/features.md for every formula, its normalisation and the sampling rules."""

from rltune_daemon.features.build import (
    FeatureSet,
    actor_features,
    build,
    critic_features,
    natural_features,
    normalise,
    raw_features,
)
from rltune_daemon.features.sampling import sample
from rltune_daemon.features.schema import (
    ACTOR_DIM,
    ACTOR_SLOTS,
    CRITIC_DIM,
    CRITIC_SLOTS,
    FEATURE_NAMES,
    FEATURES,
    SCHEMA_HASH,
    schema,
    schema_hash,
)

__all__ = [
    "ACTOR_DIM",
    "ACTOR_SLOTS",
    "CRITIC_DIM",
    "CRITIC_SLOTS",
    "FEATURES",
    "FEATURE_NAMES",
    "SCHEMA_HASH",
    "FeatureSet",
    "actor_features",
    "build",
    "critic_features",
    "natural_features",
    "normalise",
    "raw_features",
    "sample",
    "schema",
    "schema_hash",
]
