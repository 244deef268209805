"""The local stand-in's parts: reading the template, resolving its intrinsics, and one module of API calls per
kind of resource. infra.local_stand_in puts them together."""


class StandInError(RuntimeError):
    """The template holds something the stand-in cannot reproduce on moto."""
