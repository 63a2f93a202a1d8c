package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

// CheckScope returns nil when scope holds at least one artifact in st, and
// otherwise the error of ScopeNotFound: a scope filter that matches
// nothing is not_found in every command, never an empty report.
func CheckScope(ctx context.Context, st *artifacts.Store, scope artifacts.Scope) error {
	_, err := st.ListNames(ctx, scope, artifacts.ListOptions{Limit: 1})
	if err == nil {
		return nil
	}
	if artifacts.IsNotFound(err) {
		return ScopeNotFound(ctx, st, scope)
	}
	return err
}

// ScopeNotFound returns the not_found error (exit status 1) of a scope
// that holds no artifact. When the store can list its scopes and one of
// them differs from scope only in Unicode normalisation (NFC against NFD,
// as macOS file names and some keyboards produce), the message names it.
func ScopeNotFound(ctx context.Context, st *artifacts.Store, scope artifacts.Scope) error {
	msg := fmt.Sprintf("%s holds no artifacts", scope)
	var adk *adkfile.Store
	if st.As(&adk) && adk.Variant() == adkfile.VariantUsers && scope.App != adk.App() {
		msg += fmt.Sprintf("; this store is ADK's file layout without apps/, which keeps no app: it holds the scopes of app %q only (the store app; set it with --%s or %s)", adk.App(), KeyStoreApp, storeAppAlias)
	} else if v, ok := NormalizationVariant(ctx, st, scope); ok {
		msg += fmt.Sprintf("; the store has %s, whose ids differ only in Unicode normalisation (stored as %s, given as %s): select it with exactly its bytes, %s",
			v, form(v), form(scope), asciiScope(v))
	} else {
		msg += "; run 'agentstore artifacts list' to see the scopes of the store"
	}
	return CodedError(string(artifacts.CodeNotFound), errors.New(msg))
}

// NormalizationVariant looks for a scope of st that is not scope but
// equals it once every id is in Unicode normalisation form C.
func NormalizationVariant(ctx context.Context, st *artifacts.Store, scope artifacts.Scope) (artifacts.Scope, bool) {
	scopes, err := st.ListScopes(ctx)
	if err != nil {
		return artifacts.Scope{}, false
	}
	want := nfcParts(scope)
	for _, s := range scopes {
		if s != scope && s.Kind == scope.Kind && slices.Equal(nfcParts(s), want) {
			return s, true
		}
	}
	return artifacts.Scope{}, false
}

func nfcParts(s artifacts.Scope) []string {
	parts := s.Parts()
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = norm.NFC.String(p)
	}
	return out
}

// form names the normalisation form of a scope's ids: NFC, NFD or mixed.
func form(s artifacts.Scope) string {
	c, d := true, true
	for _, p := range s.Parts() {
		c = c && norm.NFC.IsNormalString(p)
		d = d && norm.NFD.IsNormalString(p)
	}
	switch {
	case c && !d:
		return "NFC"
	case d && !c:
		return "NFD"
	}
	return "mixed forms"
}

// asciiScope formats s with every non-ASCII character escaped, so that
// two normalisations of one id look different.
func asciiScope(s artifacts.Scope) string {
	parts := s.Parts()
	q := make([]string, len(parts))
	for i, p := range parts {
		q[i] = strconv.QuoteToASCII(p)
	}
	return string(s.Kind) + "(" + strings.Join(q, ",") + ")"
}
