package main

func (a *app) stress() int {
	return a.fail(errNotYet)
}
