"""PyNeuraLogic's `neuralogic.utils`: built-in datasets (`lrnn.utils.data`), pictures
(`lrnn.utils.visualize`) and PDDL reading (`lrnn.utils.pddl`, behind `lrnn.dataset.PDDLDataset`)."""
