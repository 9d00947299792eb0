"""Tests of corpora."""
