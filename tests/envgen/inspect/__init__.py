"""Tests of the inspector (envgen.inspect)."""
