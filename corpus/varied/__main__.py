from corpus.varied import main

main()
