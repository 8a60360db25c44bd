"""Tasks (loading, model), the job store on disk, the job's identity, and the records it keeps."""
