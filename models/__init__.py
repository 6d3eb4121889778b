"""What is specific to each HuggingFace model family megagen maps, and presets of real checkpoints.

The generic machinery (megagen.trace) walks any decoder built from the standard parts; a
family says which HuggingFace ``model_type`` it covers, how that family decides each
layer's attention window, and which config settings change the math in ways megagen does
not implement. Adding a family that reuses the same parts is a few lines here.
"""
from megagen.models.families import FAMILIES, Family, family_for
from megagen.models.presets import PRESETS, load, preset_config, random_model

__all__ = ["FAMILIES", "Family", "PRESETS", "family_for", "load", "preset_config", "random_model"]
