"""Tests of eval."""
