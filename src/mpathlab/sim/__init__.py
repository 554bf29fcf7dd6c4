"""Discrete-event simulation of multipath I/O over asymmetric paths."""
from .devices import Empirical, Exponential, Fault, LogNormal, PathModel, ServiceTime, best_distribution
from .engine import SimResult, Simulation, simulate
from .stats import LatencyStats, mean_abs_deviation

__all__ = ["Empirical", "Exponential", "Fault", "LatencyStats", "LogNormal", "PathModel", "ServiceTime",
           "SimResult", "Simulation", "best_distribution", "mean_abs_deviation", "simulate"]
