"""Defences of released features (transforms of a FeatureSet), and what they cost in matching and leave to an attacker."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "Defence": "transforms",
    "parse_defences": "transforms",
    "randomized_response": "transforms",
    "keep_bits": "transforms",
    "keep_keypoints": "transforms",
    "keep_matchable_keypoints": "transforms",
    "quantize_coordinates": "transforms",
    "jitter_coordinates": "transforms",
    "flip_probability": "transforms",
    "text_mask": "text_regions",
    "synthetic_pairs": "pairs",
    "measure_utility": "utility",
    "match_features": "utility",
    "attack": "attacks",
    "preview_defence": "preview",
    "iter_preview_defence": "preview",
    "DefencePreview": "preview",
})
