# Developer tasks for agentstore. `make help` lists them.
#
# The files under completions/, docs/cli/ and docs/man/ are generated from
# the command tree: after changing a command, a flag or a help text run
# `make generate` and commit the result (cmd/docs_test.go fails until then).

GO         ?= go
# GoReleaser v2. Install it with, e.g.:
#   go install github.com/goreleaser/goreleaser/v2@latest
# (or a release binary from https://github.com/goreleaser/goreleaser/releases).
GORELEASER ?= goreleaser
# Targets the release builds; `make cross` compiles the tree for each.
CROSS      ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

.PHONY: help build test test-integration test-crash test-scale test-interop ci lint generate docs-check completion-check cross release-check release-snapshot

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## build ./agentstore
	$(GO) build -o agentstore .

test: ## the default test tier (unit tests, smoke scripts) with the race detector
	$(GO) test -race ./...

test-integration: ## the integration tier: every testscript, completions, the VCS build
	.ci/tier integration -race -timeout 30m

test-crash: ## the crash tier: the SIGKILL suites, without -race
	.ci/tier crash -timeout 30m

test-scale: ## the scale tier: thousands of MCP calls, without -race
	.ci/tier scale -timeout 30m

test-interop: ## the interop tier: MCP TypeScript SDK, ADK JS and adk-go (needs node, npm ci)
	.ci/tier interop -timeout 30m

ci: ## what CI runs: lint and every tier once (.ci/run)
	bash .ci/run

lint: ## gofmt, go vet and staticcheck, in every tier's build
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: the files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags integration,crash,scale,interop ./...
	$(GO) tool staticcheck -tags integration,crash,scale,interop ./...

generate: ## regenerate completions/, docs/cli/ and docs/man/ from the command tree
	$(GO) run ./internal/gendocs

docs-check: ## fail when the generated docs or completions are out of date
	$(GO) test ./cmd/ -run '^TestDocs'

completion-check: ## load the completion scripts in bash and zsh and complete with them
	$(GO) test -tags integration ./cmd/ -run '^TestCompletion' -v

cross: ## cross-compile the whole tree for every release target
	@fail=0; for t in $(CROSS); do \
		echo "GOOS=$${t%/*} GOARCH=$${t#*/} go build ./..."; \
		CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./... || fail=1; \
	done; exit $$fail

release-check: ## validate .goreleaser.yaml with `goreleaser check` (needs goreleaser v2 on PATH)
	@command -v $(GORELEASER) >/dev/null 2>&1 || { \
		echo "release-check: $(GORELEASER) not found; install GoReleaser v2:"; \
		echo "  go install github.com/goreleaser/goreleaser/v2@latest"; exit 1; }
	$(GORELEASER) check

release-snapshot: ## build every release archive into dist/ without publishing
	$(GORELEASER) release --snapshot --clean
