"""The git layer: one repository handle, one journaled way to move a branch, its config."""
