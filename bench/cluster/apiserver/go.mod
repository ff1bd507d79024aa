module nodewarden.bench/apiserver

go 1.26

// Standard library only: this module has no requirements.
