"""Evaluation, in the spirit of inspect_ai: a dataset of samples, a system under test,
scorers and metrics; every sample's result stored in the encrypted database as it
finishes, so a run can be paused, cancelled, killed and resumed."""
