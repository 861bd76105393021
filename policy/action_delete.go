package policy

// deleteAction is DELETE: it deletes the target namespace, as the
// original operator did. It reads no parameter.
type deleteAction struct{}

func (deleteAction) Type() string          { return ActionDelete }
func (deleteAction) NeverFinal() string    { return "" }
func (deleteAction) RemovesTarget() bool   { return true }
func (deleteAction) Queues() bool          { return false }
func (deleteAction) KeepsState() bool      { return false }
func (deleteAction) Reclaims() bool        { return true }
func (deleteAction) params() []actionParam { return nil }
