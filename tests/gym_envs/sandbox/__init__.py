"""Tests of the sandbox (gym_envs.sandbox)."""
