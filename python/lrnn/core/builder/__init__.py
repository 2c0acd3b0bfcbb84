"""PyNeuraLogic's `neuralogic.core.builder` names that user code imports."""
