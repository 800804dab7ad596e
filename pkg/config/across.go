package config

// validateAcross runs the rules that relate settings of two components
// parsed by the same process (so far: the reaper's orphan grace against the
// shared store timeout). A rule whose settings live in different processes
// cannot be checked here; docs/configuration.md states it.
func validateAcross(components []Registerer) error {
	var common *Common
	var reaper *Reaper
	for _, c := range components {
		switch v := c.(type) {
		case *Common:
			common = v
		case *Reaper:
			reaper = v
		}
	}
	if common != nil && reaper != nil {
		return reaper.ValidateWith(*common)
	}
	return nil
}
