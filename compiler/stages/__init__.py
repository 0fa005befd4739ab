"""The compile stages after validation (resolve, plan, build, emit) and their output."""
