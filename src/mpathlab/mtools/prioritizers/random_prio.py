"""random: a priority from 1 to 10 drawn at every call (prioritizers/random.c draws
1 + int(10 * rand() / (RAND_MAX + 1.0)); here from the simulation's seeded stream)."""
from . import Prioritizer, register


@register
class RandomPrio(Prioritizer):
    name = "random"

    def getprio(self, path, args, env):
        return 1 + int(10.0 * env.rng.random())
