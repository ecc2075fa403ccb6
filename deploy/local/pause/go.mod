module dentrylab.local/pause

go 1.21
