"""Package data: TheAgentCompany world (people, GitLab projects) read by ``toolemu.services.world``."""
