"""Small local emulators of third-party vector services' wire protocols, started by the tests
on 127.0.0.1 (the services themselves cannot run here): what IndexFoundry's stores call is
served from memory, with the same request and response shapes as the real APIs."""
