"""tbflow's domain: tasks, images, the sandbox, the verifier, validity and the job store."""
