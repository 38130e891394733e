# bash completion for session-cleanup(8). The candidates come from the program itself
# (`session-cleanup __complete CWORD WORDS...`), so they always match the installed version:
# verbs, options, outcome words, endpoint names and session ids (asked of the daemon).
_session_cleanup() {
    local cur=${COMP_WORDS[COMP_CWORD]} candidates
    local IFS=$'\n'
    candidates=$("${COMP_WORDS[0]}" __complete "$COMP_CWORD" "${COMP_WORDS[@]}" 2>/dev/null) || return 0
    if [[ $candidates == __files__ ]]; then
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    else
        mapfile -t COMPREPLY <<< "$candidates"
        [[ -z ${COMPREPLY[0]} ]] && COMPREPLY=()
    fi
    return 0
}
complete -F _session_cleanup session-cleanup
