"""Tests of envgen."""
