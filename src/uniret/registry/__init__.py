"""Bundle registry: publishing, the production pointer, promotion, rollback, serving notification."""
