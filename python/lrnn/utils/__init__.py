"""PyNeuraLogic's `neuralogic.utils`: built-in datasets (`lrnn.utils.data`) and pictures
(`lrnn.utils.visualize`)."""
