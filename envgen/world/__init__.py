"""Worlds: services a person would use, compiled into environments (blueprint version 2).

See ``envgen/world/WORLDS.md``. Modules: :mod:`.blueprint` (the format), :mod:`.kinds` and :mod:`.data`
(semantic field kinds and realistic seeded values), :mod:`.model` (the world model), :mod:`.normalize`
(blueprint to model, with repairs), :mod:`.rows` and :mod:`.render` (state, tools and tool code),
:mod:`.sim` and :mod:`.tasks` (tasks written by running them), :mod:`.compile` (the whole compiler),
:mod:`.catalog` (the hand-written domains, ``domains/*.yaml``).
"""
