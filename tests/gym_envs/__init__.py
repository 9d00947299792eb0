"""Tests of gym_envs."""
