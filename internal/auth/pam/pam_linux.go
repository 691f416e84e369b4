//go:build linux && cgo && pam

package pam

import (
	"errors"
	"fmt"

	libpam "github.com/msteinert/pam/v2"
)

// Available reports whether this build can run PAM transactions.
func Available() bool { return true }

// flags for pam_authenticate and pam_acct_mgmt: messages are ignored anyway,
// and a user with an empty stored password must not get in.
const flags = libpam.Silent | libpam.DisallowNullAuthtok

// transact runs one whole PAM transaction on the calling thread.
func transact(service, user, password string) (err error) {
	tx, err := libpam.StartFunc(service, user, converse(user, password))
	if err != nil {
		return fmt.Errorf("pam start service %q: %w", service, err)
	}
	defer func() {
		if endErr := tx.End(); endErr != nil && err == nil {
			err = fmt.Errorf("pam end service %q: %w", service, endErr)
		}
	}()
	if err := tx.Authenticate(flags); err != nil {
		return classify("authenticate", service, err)
	}
	if err := tx.AcctMgmt(flags); err != nil {
		return classify("account check", service, err)
	}
	return nil
}

// converse answers the conversation: password prompts get the password,
// echoing prompts (a module asking for the user name) get the user, text
// and error messages get an empty answer. Anything else (binary prompts)
// fails the conversation.
func converse(user, password string) func(libpam.Style, string) (string, error) {
	return func(style libpam.Style, _ string) (string, error) {
		switch style {
		case libpam.PromptEchoOff:
			return password, nil
		case libpam.PromptEchoOn:
			return user, nil
		case libpam.ErrorMsg, libpam.TextInfo:
			return "", nil
		}
		return "", fmt.Errorf("pam: unsupported message style %d", style)
	}
}

// classify wraps a PAM status: refusals of the user wrap ErrAuthFailed,
// the rest are system failures. The PAM text (pam_strerror) stays as
// context; it never contains the password.
func classify(step, service string, err error) error {
	if refused(err) {
		return fmt.Errorf("pam %s service %q: %w: %w", step, service, ErrAuthFailed, err)
	}
	return fmt.Errorf("pam %s service %q: %w", step, service, err)
}

// refused reports whether a PAM status means the user was refused rather
// than the stack failed. PAM_AUTHINFO_UNAVAIL (directory unreachable) and
// PAM_CRED_INSUFFICIENT (the pooler may not read the credentials, e.g.
// /etc/shadow) are deployment problems, not wrong passwords.
func refused(err error) bool {
	var code libpam.Error
	if !errors.As(err, &code) {
		return false
	}
	switch code {
	case libpam.ErrAuth, libpam.ErrUserUnknown, libpam.ErrPermDenied,
		libpam.ErrMaxtries, libpam.ErrAcctExpired, libpam.ErrNewAuthtokReqd,
		libpam.ErrAuthtokExpired, libpam.ErrCredExpired:
		return true
	}
	return false
}
