package policy

// sleepAction is SLEEP: while its policy holds, the workloads its
// selectors pick sleep; once none of the manager's SLEEP policies holds,
// they wake (see evaluateSleep).
type sleepAction struct{}

func (sleepAction) Type() string { return ActionSleep }
func (sleepAction) NeverFinal() string {
	return "it sleeps and wakes as its condition and windows say"
}
func (sleepAction) RemovesTarget() bool   { return false }
func (sleepAction) Queues() bool          { return false }
func (sleepAction) KeepsState() bool      { return true }
func (sleepAction) Reclaims() bool        { return true }
func (sleepAction) params() []actionParam { return selectorParams }
