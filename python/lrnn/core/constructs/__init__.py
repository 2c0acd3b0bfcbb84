"""PyNeuraLogic's module paths (`neuralogic.core.constructs.relation`, `.rule`, ...), so code
that imports from them runs unchanged; the classes live in lrnn.core."""
