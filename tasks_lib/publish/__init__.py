"""Publishing a job outside tbflow: the Harbor job-directory export (``tbflow export``)."""
