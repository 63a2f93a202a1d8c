package cmd

import (
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The testscript commands of the broken-version scripts:
//
//	gcs-rm BUCKET OBJECT   delete OBJECT from the emulator's BUCKET
func init() {
	scriptCmds["gcs-rm"] = cmdGCSRm
}

func cmdGCSRm(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-rm")
	if len(args) != 2 {
		ts.Fatalf("usage: gcs-rm BUCKET OBJECT")
	}
	u := "http://" + emulatorOf(ts).host + "/storage/v1/b/" + url.PathEscape(args[0]) + "/o/" + url.PathEscape(args[1])
	req, err := http.NewRequest(http.MethodDelete, u, nil)
	ts.Check(err)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	ts.Check(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		ts.Fatalf("gcs-rm %s: %s: %s", args[1], resp.Status, body)
	}
}
