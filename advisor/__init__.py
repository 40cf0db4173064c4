"""advisor: a hardware cost-performance advisor for deep-learning training."""

from advisor.errors import AdvisorError, Problem, ProfileError

__version__ = "0.1.0"
__all__ = ["AdvisorError", "Problem", "ProfileError", "__version__"]
