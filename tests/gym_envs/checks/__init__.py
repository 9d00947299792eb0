"""Tests of gym_envs.checks: the check-kind registry and each kind."""
